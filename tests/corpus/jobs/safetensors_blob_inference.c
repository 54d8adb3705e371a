/* LLM inference whose weights arrive as one blob, in the style of ggml /
 * llama.cpp's backend buffer: the loader maps the safetensors file, makes
 * ONE device buffer for all weight tensors (ggml_backend_alloc_ctx_tensors:
 * a single cudaMalloc of the data section's size) and copies the whole data
 * section into it in one cudaMemcpy; each tensor is then a view at its
 * header offset, read in place and never written (no gradients, no
 * optimizer). The KV cache is one buffer cleared at creation
 * (llama_kv_cache_init + ggml_backend_buffer_clear). ggml-alloc measures the
 * worst-case graph once and allocates one compute buffer for every
 * intermediate tensor of every graph (ggml_gallocr_reserve). Per graph the
 * inputs (token ids, positions, the KQ mask: a few KiB) are copied into
 * their slots in the compute buffer (llama_set_inputs) and the logits are
 * copied back. 3 requests: a prompt pass, then 24 decode passes each. No
 * markers (inference), the driver found by dlsym.
 *
 * Truth: the 256 MiB blob is weights (a model, uploaded once and only read:
 * not a dataset, no whole_dataset finding is true), the KV cache other. The
 * compute buffer is an allocator region (ggml-alloc carves every tensor of
 * the graph in it), so it is pool, with parts: the input slots prefetch
 * (uploaded for each pass, as the corpus counts per-step inputs; one at a
 * time: depth 1) and the intermediates activations. 0 optimizer steps. The
 * KV cache and the compute buffer have the same size. */
#include "vtc.h"

#define REQUESTS 3
#define DECODE 24

static const uint64_t blob_bytes = 256 * MIB, kv_bytes = 48 * MIB, compute_bytes = 48 * MIB;
#define N_CTX 2048
#define N_BATCH 512

static const uint64_t vocab = 32000, n_ctx = N_CTX;
/* ggml-alloc's offsets for the worst-case graph (N_BATCH tokens): inputs
 * first, the mask is N_BATCH x N_CTX fp16 */
static const uint64_t pos_off = 4 * KIB, mask_off = 8 * KIB;
static const uint64_t inputs_bytes = 8 * KIB + N_BATCH * N_CTX * 2;

/* llama_set_inputs: tokens, positions and the n_tokens x n_kv mask */
static void set_inputs(CUdeviceptr compute, uint64_t n_tokens, uint64_t n_kv)
{
	vtc_htod(0, compute, n_tokens * 4);
	vtc_htod(0, compute + pos_off, n_tokens * 4);
	vtc_htod(0, compute + mask_off, n_tokens * n_kv * 2);
}

static void run_graph(CUdeviceptr compute, uint64_t n_tokens, uint64_t n_kv)
{
	set_inputs(compute, n_tokens, n_kv);
	vtc_dtoh(0, compute + compute_bytes - vocab * 4, vocab * 4); /* last token's logits */
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "safetensors_blob_inference", 1, VTC_DLSYM);
	CUdeviceptr blob = vtc_alloc(0, blob_bytes, VTC_WEIGHTS);
	vtc_htod(0, blob, blob_bytes);
	CUdeviceptr kv = vtc_alloc(0, kv_bytes, VTC_OTHER);
	vtc_zero(0, kv, kv_bytes);
	CUdeviceptr compute = vtc_alloc(0, compute_bytes, VTC_POOL);
	vtc_part(0, compute, inputs_bytes, VTC_PREFETCH); /* tokens, positions, mask */
	vtc_part(0, compute + inputs_bytes, compute_bytes - inputs_bytes, VTC_ACTIVATIONS);
	static const uint64_t prompt[REQUESTS] = {180, 37, 512};
	for (int r = 0; r < REQUESTS; r++) {
		vtc_zero(0, kv, kv_bytes); /* llama_kv_cache_clear between requests */
		run_graph(compute, prompt[r], prompt[r]);
		for (uint64_t t = 1; t <= DECODE; t++)
			run_graph(compute, 1, prompt[r] + t < n_ctx ? prompt[r] + t : n_ctx);
	}
	vtc_part_free(0, compute + inputs_bytes);
	vtc_part_free(0, compute);
	vtc_free(0, compute);
	vtc_free(0, kv);
	vtc_free(0, blob);
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu", (unsigned long long)inputs_bytes);
	vtc_line("steps 0 0");
	vtc_finish();
	return 0;
}
