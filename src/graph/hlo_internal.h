/* hlo_internal.h -- the parsed form of an HloModule text, shared by the
 * parser (hlo_parse.c) and the importer that maps it onto the graph IR
 * (reader_hlo.c).  Internal to src/graph; not a public API.
 *
 * Everything here lives in the module's arena (hlo_module.arena) or points
 * into the input text, which must outlive the module.
 */
#ifndef AS_HLO_INTERNAL_H
#define AS_HLO_INTERNAL_H

#include "graph.h"

/* A type: an array shape, or a tuple of types. */
typedef struct hlo_type {
    int ntuple;                  /**< -1: array; else number of tuple elements */
    as_shape shape;              /**< array: dtype and dims (layout dropped) */
    const struct hlo_type *elts; /**< tuple elements */
} hlo_type;

/* One `key=value` attribute; the value is raw text (braces, quotes kept). */
typedef struct hlo_attr {
    const char *key; /**< NUL-terminated */
    const char *val; /**< into the text, VLEN bytes */
    size_t vlen;
    int line, col; /**< of the key */
} hlo_attr;

/* One instruction line `[ROOT] %name = TYPE opcode(operands), attrs`. */
typedef struct hlo_instr {
    const char *name;   /**< without '%' */
    const char *opcode; /**< "dot", "get-tuple-element" */
    hlo_type type;      /**< declared result type */
    int line, col;      /**< of the name */
    int nops;
    const char **opname; /**< operand names (without '%') */
    int *opidx;          /**< operand instruction index in the computation */
    int *opline, *opcol; /**< operand positions */
    const char **optype; /**< where the operand's written type starts in the text, or NULL */
    const char *args;    /**< raw text inside the parens (constant, parameter) */
    size_t argslen;
    int nattr;
    hlo_attr *attr;
} hlo_instr;

/* One computation `[ENTRY] %name (params) -> type { ... }`. */
typedef struct hlo_comp {
    const char *name;
    int line, col;
    int nins;
    hlo_instr *ins;
    int root;       /**< index of the ROOT instruction (the last one if none is marked) */
    int nparams;    /**< number of parameter instructions */
    int *param;     /**< param[k]: index of the instruction `parameter(k)` */
    int ncalls;     /**< computations referenced by attributes */
    int *calls;     /**< their indices */
    int *call_attr; /**< per reference: instruction index << 8 | attribute index */
    int nextern;    /**< leading instructions that stand for undefined, typed operands */
} hlo_comp;

typedef struct hlo_module {
    as_arena *arena;
    const char *name;
    int ncomps;
    hlo_comp *comps;
    int entry;       /**< index of the ENTRY computation */
    int nalias;      /**< input_output_alias entries */
    int *alias_out;  /**< output tuple index ({} = -1) */
    int *alias_param; /**< parameter number */
    as_strmap comp_names; /**< computation name -> index */
    int nextern;          /**< undefined, typed operands over all computations */
    const char *extern_name; /**< the first of them (in text order) and its position */
    int extern_line, extern_col;
} hlo_module;

/*
 * Opcode of the instructions the parser adds, at the start of a computation,
 * for an operand that names no instruction of the module but has its type
 * written with it (`(f32[10], f32[]) %all-reduce.307` in a fragment of a
 * dump): the importer makes it a graph input of that type.  Real opcodes
 * cannot contain '('.
 */
#define AS_HLO_EXTERN "(extern)"


/**
 * Parse TEXT (LEN bytes) read from PATH into *OUT: lines, types, operands,
 * attributes; resolves operand names and computation references and rejects
 * recursion.  Errors are AS_EPARSE "PATH:LINE:COL: message".
 */
int as_hlo_i_parse(const char *path, const char *text, size_t len, hlo_module **out,
                   as_err *err);
void as_hlo_i_free(hlo_module *m);
/** The attribute KEY of INS, or NULL. */
const hlo_attr *as_hlo_i_attr(const hlo_instr *ins, const char *key);
/**
 * Parse an integer list "{1,2}" / "{}" / "1" from VAL into V (at most MAX);
 * returns the count or -1 if malformed.
 */
int as_hlo_i_ints(const char *val, size_t len, int64_t *v, int max);
/**
 * strtoll(P, END, 10) that reads no number (*END = P) when it is out of the
 * range of int64_t: an attribute's 100-digit stride is malformed, not INT64_MAX.
 */
int64_t as_hlo_i_int(const char *p, char **end);
/** Index of the computation named by the reference VAL ("%c" or "c"), or -1. */
int as_hlo_i_comp_ref(const hlo_module *m, const char *val, size_t len);

#endif /* AS_HLO_INTERNAL_H */
