/* Building vt_event records from what a wrapped driver call did.
 *
 * A wrapper (hook_wrappers.c, generated from hooks.def) describes its call
 * with one VT_D_* macro: which argument is the out-pointer, the size, the
 * stream, the source and destination. vt_call_begin() and vt_call_before()
 * run before the real call (whether it is recorded, then — after the wrapper
 * captured the stack — the device and a free's sequence number),
 * vt_call_after() after it
 * (an allocation's sequence number, the address it got, OOM facts). Both
 * keep errno as the real call left it. No malloc, no lock, no stdio. */
#ifndef VT_RECORD_EVENT_H
#define VT_RECORD_EVENT_H

#include <stddef.h>
#include <stdint.h>

#include "vramtrace/format.h"

enum vt_call_shape {
	VT_SHAPE_NONE,
	VT_SHAPE_ALLOC,      /* out = new address/handle; bytes requested */
	VT_SHAPE_PITCH,      /* + out2 = pitch; aux = height */
	VT_SHAPE_FREE,       /* addr; recorded before the real call */
	VT_SHAPE_VMM_CREATE, /* out = handle; device from the allocation props */
	VT_SHAPE_MAP,        /* addr = va, aux = handle, stream = offset */
	VT_SHAPE_UNMAP,      /* addr, bytes; recorded before the real call */
	VT_SHAPE_RESERVE,    /* out = va */
	VT_SHAPE_UNRESERVE,  /* addr, bytes; recorded before the real call */
	VT_SHAPE_TRIM,       /* aux = pool, bytes = keep */
	VT_SHAPE_MEMINFO,    /* out = free, out2 = total */
	VT_SHAPE_COPY,       /* addr = dst, aux = src, kind = direction */
	VT_SHAPE_BATCH,      /* list = dsts, list2 = srcs, list3 = sizes */
	VT_SHAPE_BATCH3D,    /* list = CUDA_MEMCPY3D_BATCH_OP[count] */
};

struct vt_call {
	uint8_t shape;      /* vt_call_shape */
	uint8_t kind;       /* vt_alloc_kind or vt_copy_dir */
	uint8_t out_width;  /* bytes at *out: 4 for the old 32-bit ABI */
	uint8_t device;     /* ordinal, when has_device; else the context's */
	uint8_t has_device; /* the call names its device (cuMemCreate) */
	/* Why a union: every recorded call fills this record on its stack, and
	 * at 112 bytes the compiler zeroed it with `rep stosq`, whose start-up
	 * costs ~13 ns on the AMD EPYC we measure on, more than 14 stores; at
	 * 80 bytes it is plain stores. The batch copies are the only shapes
	 * that use the lists, and they use nothing else of the first part. */
	union {
		struct {
			const void *out, *out2;
			uint64_t addr, bytes, aux;
		};
		struct { /* VT_SHAPE_BATCH, VT_SHAPE_BATCH3D */
			const void *list, *list2, *list3;
			uint64_t count;
		};
	};
	uint64_t stream;
	/* filled by vt_call_before */
	uint16_t hook;
	uint8_t api;
	uint8_t active; /* this call is being recorded */
	uint32_t stack_id;
	uint64_t seq, t_ns; /* free-like calls: taken before the real call */
};

_Static_assert(sizeof(struct vt_call) <= 80, "a call record up to 80 bytes is zeroed by stores");

#define VT_U64(x) ((uint64_t)(uintptr_t)(x))
#define VT_CALL(...) ((struct vt_call){__VA_ARGS__})

/* ---- the call shapes (used by hooks.def) -------------------------------- */
#define VT_D_ALLOC(outp, size, k, auxv, strm)                                                      \
	VT_CALL(.shape = VT_SHAPE_ALLOC, .kind = (k), .out = (outp), .out_width = sizeof *(outp),  \
	        .bytes = (uint64_t)(size), .aux = VT_U64(auxv), .stream = VT_U64(strm))
#define VT_D_PITCH(outp, pitchp, width, height)                                                    \
	VT_CALL(.shape = VT_SHAPE_PITCH, .kind = VT_ALLOC_DEVICE, .out = (outp),                   \
	        .out_width = sizeof *(outp), .out2 = (pitchp),                                     \
	        .bytes = (uint64_t)(width) * (uint64_t)(height), .aux = (uint64_t)(height))
#define VT_D_FREE(a, auxv, k, strm)                                                                \
	VT_CALL(.shape = VT_SHAPE_FREE, .kind = (k), .addr = VT_U64(a), .aux = VT_U64(auxv),       \
	        .stream = VT_U64(strm))
#define VT_D_VMM_CREATE(handlep, size, prop)                                                       \
	VT_CALL(.shape = VT_SHAPE_VMM_CREATE, .kind = VT_ALLOC_VMM, .out = (handlep),              \
	        .out_width = sizeof *(handlep), .bytes = (uint64_t)(size),                         \
	        .has_device = (prop) && (prop)->location.type == CU_MEM_LOCATION_TYPE_DEVICE &&    \
	                      (prop)->location.id >= 0 &&                                          \
	                      (prop)->location.id < (int)VT_DEVICE_UNKNOWN,                        \
	        .device = (prop) ? (uint8_t)(prop)->location.id : 0)
#define VT_D_MAP(va, size, offset, handle)                                                         \
	VT_CALL(.shape = VT_SHAPE_MAP, .addr = VT_U64(va), .bytes = (uint64_t)(size),              \
	        .aux = (uint64_t)(handle), .stream = (uint64_t)(offset))
#define VT_D_UNMAP(va, size)                                                                       \
	VT_CALL(.shape = VT_SHAPE_UNMAP, .addr = VT_U64(va), .bytes = (uint64_t)(size))
#define VT_D_RESERVE(outp, size)                                                                   \
	VT_CALL(.shape = VT_SHAPE_RESERVE, .out = (outp), .out_width = sizeof *(outp),             \
	        .bytes = (uint64_t)(size))
#define VT_D_UNRESERVE(va, size)                                                                   \
	VT_CALL(.shape = VT_SHAPE_UNRESERVE, .addr = VT_U64(va), .bytes = (uint64_t)(size))
#define VT_D_ARRAY(outp, desc, depth, levels)                                                      \
	VT_CALL(.shape = VT_SHAPE_ALLOC, .kind = VT_ALLOC_ARRAY, .out = (outp),                    \
	        .out_width = sizeof *(outp),                                                       \
	        .bytes = (desc) ? vt_array_bytes((desc)->Width, (desc)->Height, (depth),           \
	                                         (desc)->Format, (desc)->NumChannels, (levels))    \
	                        : 0)
#define VT_D_TRIM(pool, keep)                                                                      \
	VT_CALL(.shape = VT_SHAPE_TRIM, .aux = VT_U64(pool), .bytes = (uint64_t)(keep))
#define VT_D_MEMINFO(freep, totalp)                                                                \
	VT_CALL(.shape = VT_SHAPE_MEMINFO, .out = (freep), .out2 = (totalp),                       \
	        .out_width = sizeof *(freep))
#define VT_D_COPY(dst, src, n, dir, strm)                                                          \
	VT_CALL(.shape = VT_SHAPE_COPY, .kind = (dir), .addr = VT_U64(dst), .aux = VT_U64(src),    \
	        .bytes = (uint64_t)(n), .stream = VT_U64(strm))
/* 2D/3D descriptors of every ABI share the field names. */
#define VT_COPY_END(p, side)                                                                       \
	vt_copy_end((p)->side##MemoryType, VT_U64((p)->side##Host), (uint64_t)(p)->side##Device,   \
	            VT_U64((p)->side##Array))
#define VT_D_COPYND(p, strm, rows)                                                                 \
	((p) ? VT_CALL(.shape = VT_SHAPE_COPY,                                                     \
	               .kind = vt_copy_dir_of((p)->srcMemoryType, (p)->dstMemoryType),             \
	               .addr = VT_COPY_END(p, dst), .aux = VT_COPY_END(p, src),                    \
	               .bytes = (uint64_t)(p)->WidthInBytes * (rows), .stream = VT_U64(strm))      \
	     : VT_CALL(.shape = VT_SHAPE_NONE))
#define VT_D_COPY2D(p, strm) VT_D_COPYND(p, strm, (uint64_t)(p)->Height)
#define VT_D_COPY3D(p, strm)                                                                       \
	VT_D_COPYND(p, strm, (uint64_t)(p)->Height *((p)->Depth ? (p)->Depth : 1))
#define VT_D_COPY3DPEER(p, strm) VT_D_COPY3D(p, strm)
#define VT_D_BATCH(dsts, srcs, sizes, n, strm)                                                     \
	VT_CALL(.shape = VT_SHAPE_BATCH, .list = (dsts), .list2 = (srcs), .list3 = (sizes),        \
	        .count = (uint64_t)(n), .stream = VT_U64(strm))
#define VT_D_BATCH3D(ops, n, strm)                                                                 \
	VT_CALL(.shape = VT_SHAPE_BATCH3D, .list = (ops), .count = (uint64_t)(n),                  \
	        .stream = VT_U64(strm))

/* helpers the shapes use */
uint64_t vt_array_bytes(uint64_t width, uint64_t height, uint64_t depth, unsigned format,
                        unsigned channels, unsigned levels);
uint64_t vt_copy_end(int memory_type, uint64_t host, uint64_t device, uint64_t array);
uint8_t vt_copy_dir_of(int src_type, int dst_type);

/* ---- around the real call ----------------------------------------------- */
/* Is this call recorded? Fills hook, api and active (may create the log).
 * The wrapper then captures the stack itself, in its own frame
 * (vt_stack_capture_here: the unwinder walks no frame of ours but the
 * wrapper's), and calls vt_call_before (device; a free's sequence number
 * and time). Both may change errno: the wrapper restores it. */
int vt_call_begin(struct vt_call *call, int hook);
/* A release (free, unmap, address free) is recorded before the real call;
 * its stack is unwound only with VRAMTRACE_FREE_STACKS (stack_capture.h).
 * The shape is a constant in each wrapper: the test folds away. */
static inline int vt_shape_is_release(uint8_t shape)
{
	return shape == VT_SHAPE_FREE || shape == VT_SHAPE_UNMAP || shape == VT_SHAPE_UNRESERVE;
}
void vt_call_before(struct vt_call *call);
/* Records the call's outcome. May change errno: the wrapper restores it. */
void vt_call_after(struct vt_call *call, int result);

/* ---- facts other parts record ------------------------------------------- */
/* A symbol lookup the shim saw (only cu* names). */
void vt_record_lookup(uint8_t path, uint8_t outcome, uint8_t api, uint32_t version, uint64_t flags,
                      const char *name);
/* The runtime call (VT_RT_*) whose driver events this thread is inside. */
extern __thread uint8_t vt_rt_tag __attribute__((tls_model("initial-exec")));

#endif
