/* From a wrapped call's outcome to log records (format.h): events, the OOM
 * facts after a failed allocation, and lookups. Device facts come from
 * driver_facts.c.
 * Called with the re-entrancy guard held; the driver calls made here go to
 * the real driver. No malloc, no lock, no stdio. */
#define _GNU_SOURCE
#include "record_event.h"

#include <string.h>

/* every ABI variant, as hooks.h spells them (no renaming macros) */
#define __CUDA_API_VERSION_INTERNAL 1
#include <cuda.h>

#include "driver_facts.h"
#include "hooks.h"
#include "log_open.h"
#include "log_writer.h"
#include "peak_sample.h"

__thread uint8_t vt_rt_tag __attribute__((tls_model("initial-exec")));

/* ---- shapes ------------------------------------------------------------- */

uint64_t vt_array_bytes(uint64_t width, uint64_t height, uint64_t depth, unsigned format,
                        unsigned channels, unsigned levels)
{
	/* element size from the format's low bits: 8/16/32-bit ints, half,
	 * float; packed video and block formats are counted as bytes */
	unsigned elem = 1;
	switch (format) {
	case 0x02:
	case 0x09:
	case 0x10:
		elem = 2;
		break;
	case 0x03:
	case 0x0a:
	case 0x20:
		elem = 4;
		break;
	}
	uint64_t total = 0;
	height = height ? height : 1;
	depth = depth ? depth : 1;
	for (unsigned l = 0; l < (levels ? levels : 1) && width; l++) {
		total += width * height * depth * elem * (channels ? channels : 1);
		width = width > 1 ? width / 2 : 1;
		height = height > 1 ? height / 2 : 1;
		depth = depth > 1 ? depth / 2 : 1;
	}
	return total;
}

uint64_t vt_copy_end(int memory_type, uint64_t host, uint64_t device, uint64_t array)
{
	switch (memory_type) {
	case CU_MEMORYTYPE_HOST:
		return host;
	case CU_MEMORYTYPE_ARRAY:
		return array;
	default:
		return device;
	}
}

uint8_t vt_copy_dir_of(int src_type, int dst_type)
{
	if (src_type == CU_MEMORYTYPE_ARRAY || dst_type == CU_MEMORYTYPE_ARRAY)
		return VT_COPY_ARRAY;
	if (src_type == CU_MEMORYTYPE_UNIFIED || dst_type == CU_MEMORYTYPE_UNIFIED)
		return VT_COPY_UNKNOWN; /* resolved from the addresses afterwards */
	if (src_type == CU_MEMORYTYPE_HOST)
		return dst_type == CU_MEMORYTYPE_HOST ? VT_COPY_HTOH : VT_COPY_HTOD;
	return dst_type == CU_MEMORYTYPE_HOST ? VT_COPY_DTOH : VT_COPY_DTOD;
}

static uint8_t infer_dir(uint64_t dst, uint64_t src)
{
	return vt_copy_dir_of(vt_memory_type_of(src), vt_memory_type_of(dst));
}

static uint64_t read_out(const void *p, unsigned width)
{
	if (!p)
		return 0;
	if (width == 4)
		return *(const uint32_t *)p;
	return *(const uint64_t *)p;
}

/* ---- around the real call ----------------------------------------------- */

int vt_call_begin(struct vt_call *call, int hook)
{
	call->hook = (uint16_t)hook;
	call->api = vt_routes[hook].api;
	call->active = vt_shim_log_ready() && call->shape != VT_SHAPE_NONE;
	return call->active;
}

void vt_call_before(struct vt_call *call)
{
	if (vt_shape_is_release(call->shape)) {
		/* no device: which context is current says nothing about the
		 * memory a free gives back (the allocation's record does), and
		 * asking the driver was ~7 % of a recorded call */
		call->device = VT_DEVICE_UNKNOWN;
		/* right before a free: live memory is at a local maximum */
		vt_peak_sample_before_free();
		/* before the real free: the address can be handed out again
		 * the moment the driver has it back */
		call->seq = vt_log_next_seq();
		call->t_ns = vt_log_now_ns();
		return;
	}
	if (!call->has_device)
		call->device = vt_current_device();
	vt_note_device(call->device);
}

/* One event, packed (vramtrace/event_packed.h): 24-40 bytes where the plain
 * vt_event takes 64, which halves the log pages the kernel must provide. */
static void write_event(const struct vt_call *call, uint32_t type, uint64_t addr, uint64_t bytes,
                        uint64_t aux_v, uint8_t kind, int result)
{
	struct vt_event ev = {
	    .stack_id = call->stack_id,
	    /* an allocation's order and time: now, after the real call */
	    .seq = call->seq ? call->seq : vt_log_next_seq(),
	    .t_ns = call->t_ns ? call->t_ns : vt_log_now_ns(),
	    .addr = addr,
	    .bytes = bytes,
	    .aux = aux_v,
	    .stream = call->stream,
	    .api = call->api,
	    .rt_api = vt_rt_tag,
	    .device = call->device,
	    .kind = kind,
	    .result = result,
	};
	vt_log_write_packed(type, &ev);
}

static int is_oom(int result)
{
	return result == CUDA_ERROR_OUT_OF_MEMORY;
}

static void after_alloc(const struct vt_call *call, int result)
{
	uint64_t addr = result == CUDA_SUCCESS ? read_out(call->out, call->out_width) : 0;
	uint64_t bytes = call->bytes, aux_v = call->aux;
	if (call->kind == VT_ALLOC_IPC && addr)
		bytes = vt_imported_size(addr);
	if (call->shape == VT_SHAPE_PITCH && result == CUDA_SUCCESS) {
		uint64_t pitch = read_out(call->out2, call->out_width);
		bytes = pitch * call->aux; /* aux held the height */
		aux_v = pitch;
	}
	uint32_t type = call->shape == VT_SHAPE_RESERVE ? VT_REC_RESERVE : VT_REC_ALLOC;
	write_event(call, type, addr, bytes, aux_v, call->kind, result);
	if (is_oom(result))
		vt_record_meminfo_now(call->device, VT_MEMINFO_OOM);
	else if (addr && type == VT_REC_ALLOC && call->kind != VT_ALLOC_HOST)
		vt_peak_note_alloc(call->device, bytes);
}

static void after_meminfo(const struct vt_call *call, int result)
{
	if (result != CUDA_SUCCESS || !call->out || !call->out2)
		return;
	vt_write_meminfo(call->device, VT_MEMINFO_CALL, read_out(call->out, call->out_width),
	                 read_out(call->out2, call->out_width));
}

static void after_batch(const struct vt_call *call, int result)
{
	const CUdeviceptr *dsts = call->list, *srcs = call->list2;
	const size_t *sizes = call->list3;
	if (!dsts || !srcs || !sizes)
		return;
	for (uint64_t i = 0; i < call->count; i++)
		write_event(call, VT_REC_COPY, dsts[i], sizes[i], srcs[i],
		            infer_dir(dsts[i], srcs[i]), result);
}

static uint64_t operand_addr(const CUmemcpy3DOperand *op)
{
	return op->type == CU_MEMCPY_OPERAND_TYPE_ARRAY ? VT_U64(op->op.array.array)
	                                                : op->op.ptr.ptr;
}

static void after_batch3d(const struct vt_call *call, int result)
{
	const CUDA_MEMCPY3D_BATCH_OP *ops = call->list;
	for (uint64_t i = 0; ops && i < call->count; i++) {
		const CUDA_MEMCPY3D_BATCH_OP *op = &ops[i];
		uint64_t dst = operand_addr(&op->dst), src = operand_addr(&op->src);
		uint8_t dir = op->dst.type == CU_MEMCPY_OPERAND_TYPE_ARRAY ||
		                      op->src.type == CU_MEMCPY_OPERAND_TYPE_ARRAY
		                  ? VT_COPY_ARRAY
		                  : infer_dir(dst, src);
		uint64_t bytes = (uint64_t)op->extent.width * op->extent.height * op->extent.depth;
		write_event(call, VT_REC_COPY, dst, bytes, src, dir, result);
	}
}

void vt_call_after(struct vt_call *call, int result)
{
	if (call->active) {
		switch (call->shape) {
		case VT_SHAPE_ALLOC:
		case VT_SHAPE_PITCH:
		case VT_SHAPE_VMM_CREATE:
		case VT_SHAPE_RESERVE:
			after_alloc(call, result);
			break;
		case VT_SHAPE_FREE:
			write_event(call, VT_REC_FREE, call->addr, 0, call->aux, call->kind,
			            result);
			break;
		case VT_SHAPE_UNMAP:
		case VT_SHAPE_UNRESERVE:
			write_event(call,
			            call->shape == VT_SHAPE_UNMAP ? VT_REC_UNMAP : VT_REC_UNRESERVE,
			            call->addr, call->bytes, 0, 0, result);
			break;
		case VT_SHAPE_MAP:
			write_event(call, VT_REC_MAP, call->addr, call->bytes, call->aux, 0,
			            result);
			break;
		case VT_SHAPE_TRIM:
			write_event(call, VT_REC_POOL_TRIM, 0, call->bytes, call->aux, 0, result);
			break;
		case VT_SHAPE_MEMINFO:
			after_meminfo(call, result);
			break;
		case VT_SHAPE_COPY: {
			uint8_t dir = call->kind == VT_COPY_UNKNOWN
			                  ? infer_dir(call->addr, call->aux)
			                  : call->kind;
			write_event(call, VT_REC_COPY, call->addr, call->bytes, call->aux, dir,
			            result);
			break;
		}
		case VT_SHAPE_BATCH:
			after_batch(call, result);
			break;
		case VT_SHAPE_BATCH3D:
			after_batch3d(call, result);
			break;
		}
	}
}

/* ---- lookups ------------------------------------------------------------ */

void vt_record_lookup(uint8_t path, uint8_t outcome, uint8_t api, uint32_t version, uint64_t flags,
                      const char *name)
{
	if (!vt_shim_log_ready())
		return;
	uint32_t len = name ? (uint32_t)strnlen(name, 256) : 0;
	uint32_t size = (uint32_t)sizeof(struct vt_lookup_rec) + VT_ALIGN8(len);
	struct vt_lookup_rec *rec = vt_log_reserve(size);
	if (!rec)
		return;
	rec->path = path;
	rec->outcome = outcome;
	rec->api = api;
	rec->version = version;
	rec->name_len = len;
	rec->flags = flags;
	if (len)
		memcpy(rec->name, name, len);
	vt_log_commit(rec, VT_REC_LOOKUP, size);
}
