/* presets.h -- model generators for `autoshard gen`: named sizes of MLP,
 * GPT, BERT, T5, wide ResNet and GAT models from the literature, built as
 * forward graphs with the graph builder (graph.h).
 *
 * A preset is static data (its name, family, source and default
 * configuration); as_preset_build() builds the forward graph of a preset
 * under a possibly overridden configuration.  Pointers returned by
 * as_preset_get / as_preset_find are valid for the life of the process;
 * graphs built belong to the caller (as_graph_free).  docs/presets.md lists
 * every preset with its parameter count.
 */
#ifndef AS_GRAPH_PRESETS_H
#define AS_GRAPH_PRESETS_H

#include <stddef.h>
#include <stdint.h>

#include "graph.h"

/* Configuration of one model (the fields a family does not use are 0). */
typedef struct as_preset_cfg {
    int layers;      /**< blocks; t5: per stack; wresnet: depth 50, 101 or 152 */
    int64_t hidden;  /**< model width (d_model, MLP width, GAT features) */
    int heads;       /**< attention heads (hidden % heads == 0) */
    int64_t seq;     /**< sequence length (t5: encoder and decoder) */
    int64_t batch;   /**< global batch; gat: number of nodes */
    int64_t vocab;   /**< vocabulary size */
    int64_t ffn;     /**< feed-forward width, 0 = 4 * hidden */
    int64_t max_pos; /**< rows of a learned position table (gpt, bert), raised to seq */
    int width;       /**< wresnet: width factor of the bottleneck (2 = WRN-50-2) */
    int64_t image;   /**< wresnet: image side in pixels */
    int64_t classes; /**< wresnet: classes of the classifier */
    as_dtype dtype;  /**< parameters and activations: f32, f16 or bf16 */
    int mixed;       /**< training keeps fp32 master weights, moments and gradient
                          accumulator (as_train_opts.mixed): bf16-mixed / fp16-mixed */
} as_preset_cfg;

/* Options a family accepts (bits of as_preset_options()). */
#define AS_PRESET_OPT_LAYERS 0x01u
#define AS_PRESET_OPT_HIDDEN 0x02u
#define AS_PRESET_OPT_HEADS 0x04u
#define AS_PRESET_OPT_SEQ 0x08u
#define AS_PRESET_OPT_BATCH 0x10u
#define AS_PRESET_OPT_VOCAB 0x20u
#define AS_PRESET_OPT_DTYPE 0x40u
#define AS_PRESET_OPT_WIDTH 0x80u

typedef struct as_preset {
    const char *name;   /**< "gpt3-175b" */
    const char *family; /**< "mlp", "gpt", "bert", "t5", "wresnet", "gat" */
    const char *source; /**< paper the configuration comes from */
    as_preset_cfg cfg;  /**< default configuration */
} as_preset;

/* Lookup. */
int as_preset_count(void);
/** The i-th preset, in table order (family, then size). */
const as_preset *as_preset_get(int i);
/** The preset named NAME, else the first (smallest) of the family NAME ("gpt": gpt2-small), or NULL. */
const as_preset *as_preset_find(const char *name);
/**
 * Write the names of presets close to NAME (edit distance or a shared
 * family prefix) into BUF as "a, b, c"; returns how many were written.
 */
int as_preset_suggest(const char *name, char *buf, size_t n);
/** AS_PRESET_OPT_* bits: which configuration fields P's family lets a user set. */
unsigned as_preset_options(const as_preset *p);

/* Building. */
/**
 * Check CFG for P's family: positive sizes, hidden divisible by heads,
 * dtype f32/f16/bf16, wresnet depth 50/101/152 (AS_EUSAGE, one line).
 */
int as_preset_check(const as_preset *p, const as_preset_cfg *cfg, as_err *err);
/**
 * Build the forward graph of P under CFG (NULL: P's defaults) into a new
 * graph *OUT.  Its first output is the scalar loss, so as_autodiff() can
 * turn it into a training step.
 */
int as_preset_build(const as_preset *p, const as_preset_cfg *cfg, as_graph **out, as_err *err);
/** Number of trainable parameters: elements of all AS_TK_PARAM tensors of G. */
int64_t as_preset_nparams(const as_graph *g);

#endif /* AS_GRAPH_PRESETS_H */
