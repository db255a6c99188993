/* reader_hlo.h -- XLA HLO text import (the HloModule text that
 * `jax.jit(f).lower(...).as_text(dialect="hlo")` or --xla_dump_to writes).
 */
#ifndef AS_READER_HLO_H
#define AS_READER_HLO_H

#include "graph.h"

/**
 * Parse HLO module text TEXT (LEN bytes, NUL-terminated) read from PATH
 * (used in messages) into a new graph *OUT.  Errors are AS_EPARSE with
 * "PATH:LINE:COL: message".  Unknown ops become opaque ops (counted in one
 * warning line).
 */
int as_hlo_read(const char *path, const char *text, size_t len, as_graph **out, as_err *err);
/**
 * Map custom calls with target NAME to registry op OP (SPEC "NAME=OP", --custom-call) for
 * every later import; overrides the built-in table (AwsNeuronGelu=gelu, ...).  AS_EUSAGE if
 * SPEC is malformed or OP unknown, opaque or a collective.  Not thread-safe.
 */
int as_hlo_custom_call_add(const char *spec, as_err *err);
/** Forget every --custom-call mapping. */
void as_hlo_custom_call_clear(void);
/** Does TEXT look like HLO module text (first token "HloModule")? */
int as_hlo_detect(const char *text, size_t len);

#endif /* AS_READER_HLO_H */
