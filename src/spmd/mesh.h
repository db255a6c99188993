/* mesh.h -- logical device meshes: named axes laid over devices row-major.
 *
 * A mesh is 1 to AS_MESH_MAX_AXES axes, each with a name and a size; the
 * devices 0 .. ndevices-1 are laid over the axes in row-major order (the
 * last axis varies fastest), so axis k has stride prod(size[k+1..]).  The
 * devices along axis k through device d form the group
 * {d0, d0 + s, ..., d0 + (n-1)s} with d0 = d - coord_k(d)·s.
 *
 * Given the devices per node of a hardware profile (node i holds devices
 * i·dpn .. (i+1)·dpn-1), an axis is intra-node when every one of its groups
 * lies inside one node, else inter-node; the cost models pick link
 * bandwidth and latency from that.
 *
 * Ownership: as_mesh is opaque and owns its names; strings returned by
 * accessors are valid until as_mesh_free().  A mesh is immutable after
 * creation and safe to share between threads.
 */
#ifndef AS_MESH_H
#define AS_MESH_H

#include <stddef.h>
#include <stdint.h>

#include "../autoshard.h"

#define AS_MESH_MAX_AXES 4         /* most axes a mesh may have */
#define AS_MESH_MAX_DEVICES 65536  /* most devices a mesh may have */
#define AS_MESH_MAX_NAME 32        /* longest axis name, bytes with the NUL */

/* Link class of a device group. */
typedef enum as_link {
    AS_LINK_INTRA = 0, /* every group inside one node (NVLink, NVSwitch, PCIe) */
    AS_LINK_INTER      /* some group spans nodes (InfiniBand, Ethernet) */
} as_link;

/** "intra" or "inter". */
const char *as_link_name(as_link l);

typedef struct as_mesh as_mesh;

/* Create and free. */
/**
 * Parse a mesh spec: "8", "2x4", "2x2x2" (axes named x, y, z; a 4-axis mesh
 * gets a0..a3) or "dp=2,tp=4" (named axes).  Errors are AS_EUSAGE with one
 * line naming the spec, e.g. "mesh '2x0': axis 2 has size 0 (must be >= 1)":
 * malformed text, bad or duplicate names, sizes < 1, more than 4 axes, more
 * than 65536 devices.  On success *OUT is a new mesh (free with
 * as_mesh_free); on failure it is untouched.
 */
int as_mesh_parse(const char *spec, as_mesh **out, as_err *err);
/**
 * Build a mesh from NAXES sizes and names (NAMES may be NULL, or hold NULL
 * entries, for default names).  Same checks and errors as as_mesh_parse.
 */
int as_mesh_new(int naxes, const int64_t *sizes, const char *const *names, as_mesh **out,
                as_err *err);
void as_mesh_free(as_mesh *m); /* NULL is a no-op */

/* Shape. */
int as_mesh_naxes(const as_mesh *m);
/** Number of devices: the product of the axis sizes. */
int as_mesh_ndevices(const as_mesh *m);
int as_mesh_axis_size(const as_mesh *m, int axis);
const char *as_mesh_axis_name(const as_mesh *m, int axis);
/** Device-id distance between neighbours along AXIS (row-major). */
int as_mesh_axis_stride(const as_mesh *m, int axis);
/** Index of the axis called NAME, or -1. */
int as_mesh_axis_find(const as_mesh *m, const char *name);
/** Canonical text "dp=2,tp=4" (parses back to the same mesh); borrowed. */
const char *as_mesh_str(const as_mesh *m);

/* Devices and groups. */
/** Coordinates of device DEV (0 <= DEV < ndevices) into COORDS[0..naxes). */
void as_mesh_coords(const as_mesh *m, int dev, int *coords);
/** Device id at COORDS[0..naxes) (each in range). */
int as_mesh_device(const as_mesh *m, const int *coords);
/**
 * The group along AXIS through device DEV: GROUP[0..axis_size) gets the
 * device ids in increasing coordinate order (GROUP[coord] = device).
 */
void as_mesh_group(const as_mesh *m, int axis, int dev, int *group);

/* Nodes. */
/**
 * Check that the mesh fits nodes of DEVICES_PER_NODE devices: a mesh
 * larger than one node must be a whole number of nodes (AS_EUSAGE
 * otherwise, e.g. "mesh 'x=12': 12 devices span more than one node but are
 * not a multiple of 8 devices per node").
 */
int as_mesh_check_nodes(const as_mesh *m, int devices_per_node, as_err *err);
/** Number of nodes the mesh occupies (at least 1). */
int as_mesh_nnodes(const as_mesh *m, int devices_per_node);
/**
 * Link class of AXIS on nodes of DEVICES_PER_NODE devices: AS_LINK_INTRA
 * when every group along the axis lies inside one node.  O(ndevices).
 */
as_link as_mesh_axis_link(const as_mesh *m, int axis, int devices_per_node);

/* Axis roles (`--role dp=data,tp=tensor`, docs/strategies.md "Axis roles"). */
typedef enum as_axis_role {
    AS_ROLE_AUTO = 0, /* the ILP chooses (default) */
    AS_ROLE_DATA,     /* data parallel: only batch dims split; parameters replicated (or ZeRO) */
    AS_ROLE_TENSOR    /* tensor parallel: any split but of a batch dim */
} as_axis_role;

/** "auto", "data" or "tensor". */
const char *as_axis_role_name(as_axis_role r);
/**
 * Parse a role list for mesh M into ROLE[AS_MESH_MAX_AXES] (axes not named
 * stay auto): "dp=data,tp=tensor" by axis name, or "data,tensor" one per
 * axis in order.  AS_EUSAGE with one line for an unknown axis or role, an
 * axis named twice, or a positional list of another length than the mesh.
 */
int as_mesh_parse_roles(const as_mesh *m, const char *spec, uint8_t *role, as_err *err);
/** "dp=data,tp=tensor" for the axes of M whose role is not auto ("" when none) into BUF. */
const char *as_mesh_roles_str(const as_mesh *m, const uint8_t *role, char *buf, size_t n);

#endif /* AS_MESH_H */
