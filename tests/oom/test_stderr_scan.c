/* stderr_scan: each framework's OOM message as the framework prints it
 * (sources cited in analyzer/stderr_scan.h), the size parsed from it, lines
 * that must not match, and a stream cut at every possible read() boundary. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "stderr_scan.h"

struct case_row {
	const char *line;
	int framework;
	uint64_t bytes;
	int exact;
	int device;
};

static const struct case_row oom_lines[] = {
	/* TensorFlow 2.x eager op, log line (tensorflow/tensorflow#42617) */
	{"2021-09-22 12:04:35.645551: W tensorflow/core/framework/op_kernel.cc:1692] OP_REQUIRES "
	 "failed at constant_op.cc:81 : Resource exhausted: OOM when allocating tensor with "
	 "shape[320000,512] and type float on /job:localhost/replica:0/task:0/device:GPU:0 by "
	 "allocator GPU_0_bfc",
	 VT_OOM_FW_TENSORFLOW, 320000ull * 512 * 4, 1, 0},
	/* the Python exception carrying it, op named (tensorflow/tensorflow#47820) */
	{"tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
	 "tensor with shape[3,3,512,1024] and type float on "
	 "/job:localhost/replica:0/task:0/device:GPU:1 by allocator GPU_1_bfc [Op:Mul]",
	 VT_OOM_FW_TENSORFLOW, 3ull * 3 * 512 * 1024 * 4, 1, 1},
	/* TF 1.x spelling (lc222/seq2seq_chatbot_new#19) */
	{"tensorflow.python.framework.errors_impl.ResourceExhaustedError: OOM when allocating "
	 "tensor of shape [4096] and type float",
	 VT_OOM_FW_TENSORFLOW, 4096ull * 4, 1, -1},
	{"OOM when allocating tensor with shape[2,480,640,66] and type half on "
	 "/job:localhost/replica:0/task:0/device:GPU:3 by allocator GPU_3_bfc",
	 VT_OOM_FW_TENSORFLOW, 2ull * 480 * 640 * 66 * 2, 1, 3},
	/* TensorFlow 2.21 on the host, as it printed here (tf.zeros([2**38]) on a
	 * CPU-only build): recognised, sized, marked host (test_host below) */
	{"W0000 00:00:1796230588.248120   30485 op_kernel.cc:1858] OP_REQUIRES failed at "
	 "constant_op.cc:176 : RESOURCE_EXHAUSTED: OOM when allocating tensor with "
	 "shape[274877906944] and type float on /job:localhost/replica:0/task:0/device:CPU:0 by "
	 "allocator mklcpu",
	 VT_OOM_FW_TENSORFLOW, 274877906944ull * 4, 1, -1},
	{"W0000 00:00:1796230588.247912   30485 bfc_allocator.cc:502] Allocator (mklcpu) ran out of "
	 "memory trying to allocate 1.00TiB (rounded to 1099511627776)requested by op Fill",
	 VT_OOM_FW_TENSORFLOW, 1099511627776ull, 1, -1},
	/* a dtype the table does not know: recognised, size unknown */
	{"OOM when allocating tensor with shape[10] and type string on "
	 "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc",
	 VT_OOM_FW_TENSORFLOW, 0, 0, 0},
	/* the exception without a size (faustomorales/keras-ocr#195) */
	{"ResourceExhaustedError: failed to allocate memory [Op:AddV2]", VT_OOM_FW_TENSORFLOW, 0, 0,
	 -1},
	/* the BFC allocator's own line, exact size (knaw-huc/loghi#55) */
	{"9:07:50.044545: W external/local_xla/xla/tsl/framework/bfc_allocator.cc:501] Allocator "
	 "(GPU_0_bfc) ran out of memory trying to allocate 34.10MiB (rounded to 35758080)requested "
	 "by op StatefulPartitionedCall/model/SquaredDifference",
	 VT_OOM_FW_TENSORFLOW, 35758080, 1, 0},
	/* XLA / JAX (google-deepmind/alphafold#1023, jax-ml/jax#788) */
	{"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
	 "allocate 7406166528 bytes.",
	 VT_OOM_FW_XLA, 7406166528ull, 1, -1},
	{"[1] 2019-06-13 01:17:08.886805: E external/org_tensorflow/tensorflow/compiler/xla/python/"
	 "local_client.cc:672] Execution of replica 0 failed: Resource exhausted: Out of memory while "
	 "trying to allocate 5520758552 bytes.",
	 VT_OOM_FW_XLA, 5520758552ull, 1, -1},
	{"RESOURCE_EXHAUSTED: Out of memory while trying to allocate 1234 bytes.", VT_OOM_FW_XLA, 1234,
	 1, -1},
	/* (kingoflolz/mesh-transformer-jax#209) */
	{"RESOURCE_EXHAUSTED: Failed to allocate request for 256.00MiB (268435456B) on device "
	 "ordinal 2",
	 VT_OOM_FW_XLA, 268435456, 1, 2},
	/* PyTorch before 2.1 (pytorch/pytorch#59778) */
	{"RuntimeError: CUDA out of memory. Tried to allocate 2.00 GiB (GPU 0; 6.00 GiB total "
	 "capacity; 781.59 MiB already allocated; 3.03 GiB free; 1.24 GiB reserved in total by "
	 "PyTorch)",
	 VT_OOM_FW_PYTORCH, 2147483648ull, 0, 0},
	/* PyTorch 2.1+ (pytorch/pytorch#16417) */
	{"torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 1 has a "
	 "total capacity of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this "
	 "process has 23.60 GiB memory in use.",
	 VT_OOM_FW_PYTORCH, 22ull << 20, 0, 1},
	{"RuntimeError: CUDA out of memory. Tried to allocate 1024.00 KiB (GPU 0; 11.17 GiB total "
	 "capacity; 10.90 GiB already allocated; 576.00 KiB free; 30.96 MiB cached)",
	 VT_OOM_FW_PYTORCH, 1024ull * 1024, 0, 0},
	{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 512 bytes. GPU 0 has a total "
	 "capacity of 79.15 GiB",
	 VT_OOM_FW_PYTORCH, 512, 1, 0},
	{"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.70 GiB. GPU 0 has a total "
	 "capacty of 6.00 GiB",
	 VT_OOM_FW_PYTORCH, 1825361101ull /* round(1.70 * 2^30) */, 0, 0},
};

static void test_formats(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof oom_lines / sizeof oom_lines[0]; i++) {
		const struct case_row *c = &oom_lines[i];
		struct vt_oom_message m;
		int hit = vt_oom_match_line(c->line, strlen(c->line), &m);
		if (!hit)
			fail_msg("no match: %s", c->line);
		assert_int_equal(m.framework, c->framework);
		if (m.bytes != c->bytes)
			fail_msg("row %zu: bytes %llu, want %llu", i, (unsigned long long)m.bytes,
			         (unsigned long long)c->bytes);
		assert_int_equal(m.bytes_exact, c->exact);
		assert_int_equal(m.device, c->device);
		assert_non_null(m.format);
	}
}

/* Host-memory messages are told apart from GPU ones. */
static void test_host(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof oom_lines / sizeof oom_lines[0]; i++) {
		struct vt_oom_message m;
		const char *l = oom_lines[i].line;
		assert_true(vt_oom_match_line(l, strlen(l), &m));
		int want = strstr(l, "device:CPU") != NULL || strstr(l, "(mklcpu)") != NULL;
		if (m.host != want)
			fail_msg("host %d, want %d: %s", m.host, want, l);
	}
}

static void test_not_oom(void **state)
{
	(void)state;
	static const char *const lines[] = {
		/* the BFC warning that is not a failure (tensorflow/tensorflow#43546) */
		"2020-09-24 21:35:23.363348: W tensorflow/core/common_runtime/bfc_allocator.cc:246] "
		"Allocator (GPU_0_bfc) ran out of memory trying to allocate 1.02GiB with "
		"freed_by_count=0. The caller indicates that this is not a failure, but may mean that "
		"there could be performance gains if more memory were available.",
		"Hint: If you want to see a list of allocated tensors when OOM happens, add "
		"report_tensor_allocations_upon_oom to RunOptions for current allocation info.",
		"Epoch 1/10 - loss: 0.231 - out of memory? no",
		"RuntimeError: CUDA error: an illegal memory access was encountered",
		"",
	};
	for (size_t i = 0; i < sizeof lines / sizeof lines[0]; i++) {
		struct vt_oom_message m;
		if (vt_oom_match_line(lines[i], strlen(lines[i]), &m))
			fail_msg("false match (%s): %s", m.format, lines[i]);
	}
}

/* ---- streaming ----------------------------------------------------------- */

struct seen {
	int n;
	uint64_t bytes[16];
	char text[16][160];
};

static void collect(const char *line, size_t len, const struct vt_oom_message *msg, void *ctx)
{
	struct seen *s = ctx;
	if (s->n >= 16)
		return;
	s->bytes[s->n] = msg->bytes;
	size_t n = len < 159 ? len : 159;
	memcpy(s->text[s->n], line, n);
	s->text[s->n][n] = 0;
	s->n++;
}

static const char stream[] =
	"epoch 1\r\x1b[32mprogress 50%\x1b[0m\r"
	"W op_kernel.cc] OOM when allocating tensor with shape[1024,1024] and type float on "
	"/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
	"\xff\xfe binary \x01\n"
	"jaxlib.xla_extension.XlaRuntimeError: RESOURCE_EXHAUSTED: Out of memory while trying to "
	"allocate 1234 bytes.\r\n"
	"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
	"capacity of 8.00 GiB";  /* no terminator: the end of the stream ends it */

static void check_stream_result(const struct seen *s)
{
	assert_int_equal(s->n, 3);
	assert_int_equal(s->bytes[0], 4ull << 20);
	assert_int_equal(s->bytes[1], 1234);
	assert_int_equal(s->bytes[2], 2ull << 30);
	assert_true(strncmp(s->text[0], "W op_kernel.cc] OOM when", 24) == 0);
	assert_true(strncmp(s->text[2], "torch.OutOfMemoryError:", 23) == 0);
}

/* Every cut into two reads, and one byte per read. */
static void test_split_reads(void **state)
{
	(void)state;
	size_t n = sizeof stream - 1;
	for (size_t cut = 0; cut <= n; cut++) {
		struct seen s = {0};
		struct vt_stderr_scan scan;
		vt_stderr_scan_init(&scan, collect, &s);
		vt_stderr_scan_feed(&scan, stream, cut);
		vt_stderr_scan_feed(&scan, stream + cut, n - cut);
		vt_stderr_scan_finish(&scan);
		check_stream_result(&s);
	}
	struct seen s = {0};
	struct vt_stderr_scan scan;
	vt_stderr_scan_init(&scan, collect, &s);
	for (size_t i = 0; i < n; i++)
		vt_stderr_scan_feed(&scan, stream + i, 1);
	vt_stderr_scan_finish(&scan);
	check_stream_result(&s);
	assert_int_equal(scan.matches, 3);
}

/* A line longer than the buffer is matched on its first VT_SCAN_LINE_MAX
 * bytes, and the next line is unaffected. */
static void test_long_line(void **state)
{
	(void)state;
	static const char msg[] = "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 99 bytes.";
	size_t pad = 3 * VT_SCAN_LINE_MAX;
	char *buf = malloc(pad + 2 * sizeof msg + 16);
	size_t n = 0;
	memcpy(buf + n, msg, sizeof msg - 1);
	n += sizeof msg - 1;
	memset(buf + n, 'a', pad);
	n += pad;
	buf[n++] = '\n';
	memset(buf + n, 'b', 10);
	n += 10;
	memcpy(buf + n, msg, sizeof msg - 1);
	n += sizeof msg - 1;
	buf[n++] = '\n';
	struct seen s = {0};
	struct vt_stderr_scan scan;
	vt_stderr_scan_init(&scan, collect, &s);
	for (size_t off = 0; off < n; off += 1000)
		vt_stderr_scan_feed(&scan, buf + off, n - off < 1000 ? n - off : 1000);
	vt_stderr_scan_finish(&scan);
	assert_int_equal(s.n, 2);
	assert_int_equal(s.bytes[0], 99);
	assert_int_equal(s.bytes[1], 99);
	free(buf);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_formats),
		cmocka_unit_test(test_host),
		cmocka_unit_test(test_not_oom),
		cmocka_unit_test(test_split_reads),
		cmocka_unit_test(test_long_line),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
