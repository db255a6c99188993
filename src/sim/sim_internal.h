/* sim_internal.h -- the event program's representation, shared by the files
 * of src/sim (program.c builds it; engine.c, memory.c, report.c and
 * trace.c read it).
 *
 * Layout (structure of arrays, so the engine walks flat memory):
 *  - events: one record each, in program order; device lists, read and
 *    write buffer ids live in the shared arrays devs/rds/wrs at offsets.
 *  - buffers: one per (tensor id, device) pair, found through the tensor's
 *    row (buffer ids by device over the device range it lives on) while that
 *    range is compact, else through a 64-bit open-addressing hash; producer =
 *    the event writing it (-1 = declared or never produced).
 *  - ops: distinct compute signatures (op, local shapes, attributes),
 *    interned by their canonical text so identical ops share one index and
 *    are costed once per run.
 */
#ifndef AS_SIM_INTERNAL_H
#define AS_SIM_INTERNAL_H

#include "sim.h"

#define SIM_NONE (-1)

/* Buffer origins. */
enum { SIM_BUF_ACT = 0, SIM_BUF_RESIDENT, SIM_BUF_INPUT };

typedef struct sim_event {
    uint8_t kind;     /**< as_sim_kind */
    uint8_t coll;     /**< as_coll (AS_COLL_SEND for sends) */
    uint8_t stream;   /**< AS_SIM_STREAM_* with overlap */
    uint8_t pad;
    int32_t line;     /**< source line, 0 = built */
    int32_t reads_col; /**< column of reads= (0 = none) */
    int32_t label;    /**< offset into the label pool, -1 = none */
    int32_t op;       /**< index into ops for costed compute, -1 otherwise */
    uint32_t dev_off, rd_off, wr_off;
    uint16_t ndev, nrd, nwr, pad2;
    double time;      /**< fixed seconds, < 0 = costed */
    double bytes;     /**< coll/send payload */
} sim_event;

typedef struct sim_buf {
    int32_t tensor;
    int32_t dev;
    int32_t producer; /**< event id, -1 if declared or never written */
    int32_t origin;   /**< SIM_BUF_* */
    double bytes;     /**< per device */
} sim_buf;

/* Buffers of one tensor by device: ROW[d - LO] for d in [LO, LO + SPAN), -1 = none. */
typedef struct sim_trow {
    int32_t *row;     /**< NULL: no buffer yet, or HASHED */
    int32_t lo, span; /**< device range the row covers */
    int32_t nbuf;     /**< buffers in the row */
    int32_t hashed;   /**< 1: the tensor's buffers are in the hash (its devices are sparse) */
} sim_trow;

typedef struct sim_op {
    as_opinfo info;   /**< def, shapes and bound attributes (program arena) */
    char *text;       /**< canonical "op=matmul in=f32[..],f32[..] attr.k=v" */
} sim_op;

typedef struct sim_decl {
    int32_t buf;      /**< buffer id */
    int32_t kind;     /**< as_sim_decl */
} sim_decl;

struct as_sim_prog {
    as_arena *arena;
    char *name, *hw, *model, *path;
    double batch;
    int ndev;
    AS_VEC(sim_event) ev;
    AS_VEC(int32_t) devs;
    AS_VEC(int32_t) rds;
    AS_VEC(int32_t) wrs;
    AS_VEC(sim_buf) bufs;
    AS_VEC(sim_decl) decls;
    AS_VEC(sim_op) ops;
    AS_VEC(char *) tnames;   /**< tensor id -> name (arena) */
    AS_VEC(char) labels;     /**< NUL-separated label pool */
    int32_t lastlab;         /**< 1 + offset of the last label in the pool, 0 = none */
    as_strmap tmap;          /**< tensor name -> id */
    as_strmap opmap;         /**< canonical op text -> ops index */
    int32_t *rep;            /**< [ndev] device whose timeline a device mirrors (NULL: itself) */
    int nexplicit;           /**< devices that are their own representative */
    AS_VEC(sim_trow) trows;  /**< tensor id -> its buffers by device (compact tensors) */
    int64_t *bkeys;          /**< buffer hash of sparse tensors: key (tensor << 17 | dev) + 1, 0 empty */
    int32_t *bvals;
    size_t bcap, bn;         /**< slots, keys in the hash */
};

/** Representative of device D (D itself unless it mirrors another). */
static inline int32_t
as_sim_i_rep(const as_sim_prog *p, int32_t d)
{
    return p->rep != NULL ? p->rep[d] : d;
}
/** Buffer id of (T, DEV), or -1. */
int32_t as_sim_i_buf_find(const as_sim_prog *p, int32_t t, int dev);
/** Devices per node used to classify a group's link (intra when in one node). */
as_link as_sim_i_group_link(const int32_t *devs, int n, int devices_per_node);
/**
 * Memory model (memory.c): fill dev[].resident/peak/peak_time/oom from the
 * event times START/END; *NBUF gets the number of buffers tracked.
 */
void as_sim_i_memory(const as_sim_prog *p, const double *start, const double *end,
                     double capacity, as_sim_dev_stats *dev, size_t *nbuf);
/** Memory over time: called per device with (time, bytes in use incl. resident) at each change. */
typedef void (*as_sim_i_mem_cb)(void *ud, int dev, double t, double bytes);
/** as_sim_i_memory, reporting every change to CB (traces); the engine passes no callback. */
void as_sim_i_memory_cb(const as_sim_prog *p, const double *start, const double *end,
                        double capacity, as_sim_dev_stats *dev, size_t *nbuf, as_sim_i_mem_cb cb,
                        void *ud);
/** Write a double so it reads back exactly, shortest of %.15g/%.17g. */
void as_sim_i_fmt_num(char *buf, size_t n, double x);

#endif /* AS_SIM_INTERNAL_H */
