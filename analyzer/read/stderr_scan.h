/* Recognising a framework's out-of-memory message in a job's stderr.
 *
 * When TensorFlow's BFC pool, XLA's allocator or PyTorch's caching allocator
 * runs out, the driver never fails (the pool was taken earlier): the only
 * evidence is text on stderr. `vramtrace run` relays the job's stderr
 * (run_relay.h) through a scanner that cuts the byte stream into lines
 * (a line ends at '\n' or '\r', so progress bars end lines too) and matches
 * each line against the formats below, whatever read() boundaries cut it.
 *
 * The formats, as the frameworks print them (examples from public reports):
 *  TensorFlow  "OOM when allocating tensor with shape[320000,512] and type
 *              float on /job:localhost/replica:0/task:0/device:GPU:0 by
 *              allocator GPU_0_bfc"  (tensorflow/tensorflow#42617, #47820);
 *              TF 1.x "OOM when allocating tensor of shape [4096] and type
 *              float"; the Python exception "...errors_impl.
 *              ResourceExhaustedError: ..." (tensorflow/models#5527);
 *              the BFC allocator "Allocator (GPU_0_bfc) ran out of memory
 *              trying to allocate 34.10MiB (rounded to 35758080)requested by
 *              op ..." (knaw-huc/loghi#55) -- but not its "The caller
 *              indicates that this is not a failure" warning (#43546).
 *  XLA / JAX   "jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED:
 *              Out of memory while trying to allocate 7406166528 bytes."
 *              (google-deepmind/alphafold#1023), older "Resource exhausted:
 *              Out of memory while trying to allocate 5520758552 bytes."
 *              (jax-ml/jax#788), and "RESOURCE_EXHAUSTED: Failed to allocate
 *              request for 256.00MiB (268435456B) on device ordinal 0"
 *              (kingoflolz/mesh-transformer-jax#209).
 *  PyTorch     "CUDA out of memory. Tried to allocate 2.26 GiB (GPU 0; 6.00
 *              GiB total capacity; ...)" (pytorch/pytorch#59778) and from 2.1
 *              "... Tried to allocate 22.00 MiB. GPU 0 has a total capacity
 *              of 23.65 GiB ..." (pytorch/pytorch#16417); the size comes from
 *              c10's format_size(): "N bytes" up to 1 KiB, else 2 decimals of
 *              KiB/MiB/GiB, so it is exact only to 0.5 % (bytes_exact = 0).
 *
 * The parsed size: TensorFlow's tensor is elements x the size of its dtype
 * (tensorflow/core/framework/types.cc names); XLA's and the BFC "rounded to"
 * are exact bytes; human sizes are converted with binary units.
 */
#ifndef VT_STDERR_SCAN_H
#define VT_STDERR_SCAN_H

#include <stddef.h>
#include <stdint.h>

#define VT_SCAN_LINE_MAX 4096 /* a longer line is matched on its first 4 KiB */

enum vt_oom_framework {
	VT_OOM_FW_NONE = 0,
	VT_OOM_FW_TENSORFLOW,
	VT_OOM_FW_XLA,
	VT_OOM_FW_PYTORCH,
};

struct vt_oom_message {
	int framework;      /* enum vt_oom_framework */
	const char *format; /* which message: "tf_tensor", "xla_oom", ... */
	uint64_t bytes;     /* the failed request, 0 when the line has no size */
	int bytes_exact;    /* 1: bytes as the framework counted them */
	int device;         /* GPU ordinal named in the message, -1 if none */
	int host;           /* the message names host memory (TensorFlow's
	                       device:CPU, its cpu/mklcpu allocators): not a GPU */
};

/* Match one line (no terminator needed; need not be NUL-terminated).
 * Returns 1 and fills *out when it is a framework OOM message, else 0. */
int vt_oom_match_line(const char *line, size_t len, struct vt_oom_message *out);

const char *vt_oom_framework_name(int framework); /* "tensorflow", "xla", "pytorch" */

/* A matched line: text without its terminator (at most VT_SCAN_LINE_MAX). */
typedef void (*vt_scan_fn)(const char *line, size_t len, const struct vt_oom_message *msg,
                           void *ctx);

struct vt_stderr_scan {
	char line[VT_SCAN_LINE_MAX];
	size_t len;         /* bytes of the current line kept in line[] */
	vt_scan_fn fn;
	void *ctx;
	uint64_t lines, matches;
};

void vt_stderr_scan_init(struct vt_stderr_scan *s, vt_scan_fn fn, void *ctx);
/* Any bytes, cut anywhere. */
void vt_stderr_scan_feed(struct vt_stderr_scan *s, const void *buf, size_t n);
/* End of stream: the last line may lack its terminator. */
void vt_stderr_scan_finish(struct vt_stderr_scan *s);

#endif
