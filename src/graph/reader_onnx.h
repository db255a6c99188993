/* reader_onnx.h -- ONNX model import (binary ModelProto, as torch.onnx.export
 * and onnx.save write it; docs/onnx.md).
 */
#ifndef AS_READER_ONNX_H
#define AS_READER_ONNX_H

#include "graph.h"

/**
 * Parse the ONNX model in TEXT (LEN bytes) read from PATH (used in messages
 * and to find external tensor data beside it) into a new graph *OUT.
 * Errors are AS_EPARSE with one line "PATH: ..." (byte offsets for
 * malformed protobuf, node names for graph errors).  Unknown ops become
 * opaque ops (counted in one warning line).
 */
int as_onnx_read(const char *path, const char *text, size_t len, as_graph **out, as_err *err);
/** Does TEXT look like a binary ONNX ModelProto? */
int as_onnx_detect(const char *text, size_t len);

#endif /* AS_READER_ONNX_H */
