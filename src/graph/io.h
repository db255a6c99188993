/* io.h -- reading and writing graph files.
 *
 * Formats: the native text format .asg (docs/asg.md) and XLA HLO text
 * (reader_hlo.h).  as_graph_read() detects the format from the content, not
 * the file name, builds the graph (running autodiff for a `train`
 * directive) and runs the igraph checks of check.h on the result.
 *
 * Errors are AS_EPARSE with "FILE:LINE:COL: message" (1-based) for
 * malformed input and AS_EIO for files that cannot be read or written.
 * Graphs returned in *out belong to the caller (as_graph_free).
 */
#ifndef AS_GRAPH_IO_H
#define AS_GRAPH_IO_H

#include <stdio.h>

#include "graph.h"

/* Formats. */
typedef enum as_graph_format {
    AS_FMT_ASG = 0, /* native text */
    AS_FMT_HLO,     /* XLA HLO module text */
    AS_FMT_ONNX     /* binary ONNX ModelProto */
} as_graph_format;

/** Guess the format of TEXT (LEN bytes) from its content. */
as_graph_format as_graph_detect(const char *text, size_t len);

/* Reading. */
/**
 * Read PATH ("-" = stdin), detect its format, parse it and check the result
 * (as_graph_check).  On success *OUT is a new graph.
 */
int as_graph_read(const char *path, as_graph **out, as_err *err);
/** The same for TEXT (LEN bytes, NUL-terminated) already in memory; NAME is used in messages. */
int as_graph_parse(const char *name, const char *text, size_t len, as_graph **out, as_err *err);
/**
 * Parse .asg TEXT (LEN bytes, NUL-terminated) read from PATH (used in
 * messages and for the default graph name) into a new graph *OUT.  A
 * `train` directive appends the backward pass and optimizer (as_autodiff).
 * Does not run as_graph_check.
 */
int as_graph_parse_asg(const char *path, const char *text, size_t len, as_graph **out,
                       as_err *err);

/* Writing. */
/**
 * Write G as canonical .asg text to FP: parse -> write -> parse -> write is
 * byte-identical.  AS_EIO on a write error, AS_EPARSE if a name cannot be
 * written in the grammar.
 */
int as_graph_write_asg(const as_graph *g, FILE *fp, as_err *err);
/** The same text in a malloc'ed NUL-terminated buffer *BUF of *LEN bytes. */
int as_graph_write_asg_buf(const as_graph *g, char **buf, size_t *len, as_err *err);
/** Write G as .asg to PATH atomically ("-" or NULL = stdout). */
int as_graph_save(const as_graph *g, const char *path, as_err *err);

#endif /* AS_GRAPH_IO_H */
