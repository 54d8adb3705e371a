/* A recommender with a dynamic sparse embedding and a lazy, row-wise Adam
 * (SparseAdam semantics: only the rows a batch touched are updated). In
 * torch.optim.SparseAdam the state is dense (zeros_like the whole table at
 * the first step); this job imitates the dynamic-embedding stores that make
 * rows only when ids first appear (HierarchicalKV, DeepRec's
 * EmbeddingVariable with GPU banks): the id -> row index lives on the host,
 * embedding rows live in device chunks of 16384 rows x 64 fp32 (4 MiB each)
 * allocated when new ids need them (initialised on the device), and the
 * optimizer's exp_avg / exp_avg_sq rows get chunks of their own, made at the
 * first optimizer step that updates a row in them. Many new ids early, few
 * later: chunks appear at irregular steps, most in the first ones.
 *
 * Each step: the batch's unique ids, bag offsets, dense features and labels
 * uploaded (one batch on the device); the lookup gathers the rows (a
 * 4096 x 64 fp32 tensor) and pools them per bag; a 3-layer dense MLP (made
 * on the device, Adam state at the first step) runs forward and backward
 * (its first hidden state, 512 x 1024 fp32, is exactly the second layer's
 * weight); the sparse gradient is coalesced
 * (unique row indices + values: transient); the lazy Adam updates rows in
 * place. No markers; linked against libcuda (direct).
 *
 * Truth: embedding chunks and MLP parameters weights (made on the device,
 * never uploaded); exp_avg / exp_avg_sq chunks and the MLP's Adam state
 * optimizer (a state chunk is exactly a row chunk's bytes); MLP .grads and
 * the sparse gradient's indices and values gradients; the four input
 * tensors prefetch (depth 1); gathered rows, pooled bags and MLP tensors
 * activations; no dataset (the table is built by the job, never uploaded);
 * 12 steps. */
#include "vtc.h"

#define MAX_CHUNKS 32
#define MLP 3

static const uint64_t chunk_bytes = 16384 * 64 * 4;
static CUdeviceptr rows[MAX_CHUNKS], exp_avg[MAX_CHUNKS], exp_avg_sq[MAX_CHUNKS];
static int n_rows, n_state;

/* the lookup: new ids beyond the allocated rows get a new chunk */
static void ensure_rows(int chunks_needed)
{
	while (n_rows < chunks_needed) {
		rows[n_rows] = vtc_alloc(0, chunk_bytes, VTC_WEIGHTS);
		vtc_zero(0, rows[n_rows], chunk_bytes); /* uniform init kernel */
		n_rows++;
	}
}

/* the lazy optimizer: state rows made where the update first lands */
static void ensure_state(void)
{
	while (n_state < n_rows) {
		exp_avg[n_state] = vtc_alloc(0, chunk_bytes, VTC_OPTIMIZER);
		vtc_zero(0, exp_avg[n_state], chunk_bytes);
		exp_avg_sq[n_state] = vtc_alloc(0, chunk_bytes, VTC_OPTIMIZER);
		vtc_zero(0, exp_avg_sq[n_state], chunk_bytes);
		n_state++;
	}
}

static CUdeviceptr upload(uint64_t bytes, const void *pinned)
{
	CUdeviceptr p = vtc_alloc(0, bytes, VTC_PREFETCH);
	vtc_htod_from(0, p, pinned, bytes, 0);
	return p;
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "sparse_lazy_rows", 1, VTC_DIRECT);
	const int steps = 12;
	/* chunks of rows in use after each step: new ids thin out */
	const int chunks_after[12] = {8, 12, 15, 17, 19, 20, 21, 22, 22, 23, 23, 23};
	const uint64_t ids = 4096 * 8, offsets = 512 * 8, dense_in = 512 * 13 * 4, labels = 512 * 4;
	const uint64_t gathered = 4096 * 64 * 4, pooled = 512 * 64 * 4;
	const uint64_t mlp[MLP] = {(64 + 13) * 1024 * 4, 1024 * 512 * 4, 512 * 4};
	CUdeviceptr w[MLP], m[MLP], v[MLP];
	for (int l = 0; l < MLP; l++) {
		w[l] = vtc_alloc(0, mlp[l], VTC_WEIGHTS);
		vtc_zero(0, w[l], mlp[l]);
	}
	void *pinned;
	VTC_CHECK(vtc.MemAllocHost(&pinned, ids));
	for (int s = 0; s < steps; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr in[4] = {upload(ids, pinned), upload(offsets, pinned),
		                     upload(dense_in, pinned), upload(labels, pinned)};
		ensure_rows(chunks_after[s]);
		CUdeviceptr g = vtc_alloc(0, gathered, VTC_ACTIVATIONS);
		CUdeviceptr bag = vtc_alloc(0, pooled, VTC_ACTIVATIONS);
		vtc_free(0, g); /* embedding_bag keeps only the pooled output */
		CUdeviceptr h1 = vtc_alloc(0, 512 * 1024 * 4, VTC_ACTIVATIONS);
		CUdeviceptr h2 = vtc_alloc(0, 512 * 512 * 4, VTC_ACTIVATIONS);
		CUdeviceptr out = vtc_alloc(0, 512 * 4, VTC_ACTIVATIONS);
		CUdeviceptr gw[MLP];
		for (int l = MLP - 1; l >= 0; l--)
			gw[l] = vtc_alloc(0, mlp[l], VTC_GRADIENTS);
		CUdeviceptr sp_idx = vtc_alloc(0, ids, VTC_GRADIENTS); /* coalesced row indices */
		CUdeviceptr sp_val =
		    vtc_alloc(0, gathered, VTC_GRADIENTS); /* one row of grad per id */
		CUdeviceptr fwd[] = {out, h2, h1, bag};
		for (unsigned k = 0; k < sizeof fwd / sizeof fwd[0]; k++)
			vtc_free(0, fwd[k]);
		ensure_state();
		if (s == 0)
			for (int l = 0; l < MLP; l++) {
				m[l] = vtc_alloc(0, mlp[l], VTC_OPTIMIZER);
				vtc_zero(0, m[l], mlp[l]);
				v[l] = vtc_alloc(0, mlp[l], VTC_OPTIMIZER);
				vtc_zero(0, v[l], mlp[l]);
			}
		vtc_free(0, sp_val);
		vtc_free(0, sp_idx);
		for (int l = 0; l < MLP; l++)
			vtc_free(0, gw[l]);
		for (int k = 0; k < 4; k++)
			vtc_free(0, in[k]);
	}
	VTC_CHECK(vtc.MemFreeHost(pinned));
	for (int c = 0; c < n_rows; c++) {
		vtc_free(0, exp_avg_sq[c]);
		vtc_free(0, exp_avg[c]);
		vtc_free(0, rows[c]);
	}
	for (int l = 0; l < MLP; l++) {
		vtc_free(0, v[l]);
		vtc_free(0, m[l]);
		vtc_free(0, w[l]);
	}
	vtc_line("no_finding whole_dataset_upload");
	vtc_line("finding prefetch_depth 0 1 %llu",
	         (unsigned long long)(ids + offsets + dense_in + labels));
	vtc_line("steps 0 %d", steps);
	vtc_finish();
	return 0;
}
