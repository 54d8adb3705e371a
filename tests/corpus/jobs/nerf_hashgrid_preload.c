/* Instant-NGP-style NeRF training in PyTorch (torch-ngp `main_nerf.py
 * --preload --fp16 --cuda_ray`) over the CUDACachingAllocator (vtc_cache).
 *
 * What is modelled (sources read: torch-ngp nerf/provider.py `NeRFDataset`
 * (images stacked on the host, `self.poses = self.poses.to(self.device)`,
 * `self.images = self.images.to(dtype).to(self.device)` when preload: the
 * whole training set moved once), `collate` -> nerf/utils.py `get_rays`
 * (`torch.randint(0, H*W, size=[N], device=device)`, rays_o / rays_d made
 * on the device), `Trainer.train_step` (`torch.gather(images, 1, inds)`),
 * `update_extra_state` every 16 steps; gridencoder/grid.py `GridEncoder`
 * (16 levels, 2 features, log2 hashmap 19: `embeddings` one fp32
 * parameter, `offsets` a buffer); nerf/renderer.py `NeRFRenderer`
 * (`density_grid` (cascades x 128^3 float32) and `density_bitfield`
 * (cascades x 128^3 / 8 uint8) registered buffers; `march_rays_train`
 * sample buffers per step); torch/optim/adam.py (eps 1e-15, state at the
 * first step); torch/cuda/amp GradScaler (`_scale` / `_growth_tracker`
 * made at the first `scale`, a found_inf per step)):
 *   - `model.to(device)`: hash embeddings, offsets, the sigma and color
 *     MLPs (tiny fp32 matrices) and the density grid buffers, uploaded;
 *   - the dataset preloaded: 100 images of 800 x 800 RGBA in fp16
 *     (256,000,000 B) and 100 camera poses (6,400 B);
 *   - 40 steps of 4,096 rays: indices, rays, gathered pixels, up to 512
 *     samples a ray (xyzs, dirs, deltas, rays index), hash features, MLP
 *     activations, composited colours, loss; backward; Adam; every 16
 *     steps the density grid updated (temporaries, grid kept).
 * Markers on, driver by cuGetProcAddress (libcudart).
 *
 * Truth: images and poses dataset, each uploaded whole: two
 * whole_dataset_upload findings (256,000,000 B and 6,400 B). Embeddings,
 * MLP weights, offsets and the density grid weights (buffers of the
 * model); `.grad`s gradients; Adam state optimizer; GradScaler scalars
 * other; the rays, the gathered pixels and every per-step tensor
 * activations (made on the device from the on-device dataset: the README's
 * "gathered on the device" rule). No prefetch; 40 steps. Segments by kind
 * or pool. Coincidences: the density grid (1 cascade x 128^3 float32 =
 * 8 MiB) is the size of the sigmas and the temporary grid of its update;
 * exp_avg and exp_avg_sq of the embeddings are the embeddings' size.
 */
#include "vtc.h"
#include "vtc_pool.h"

#define NIMG 100
#define IMG_BYTES (800ull * 800 * 4 * 2)
#define RAYS 4096ull
#define SAMPLES 512ull
#define STEPS 40
#define NPARAM 8

static struct vtc_cache C;

static uint64_t embed_entries(void)
{
	/* per level: min(2^19, (res + 1)^3) rounded to 8, res = 16 x 1.3819^l */
	static const unsigned res[16] = {16,  22,  30,  42,  58,  80,   111,  153,
	                                 212, 293, 405, 560, 774, 1069, 1478, 2048};
	uint64_t total = 0;
	for (int l = 0; l < 16; l++) {
		uint64_t r = (uint64_t)res[l] + 1, n = r * r * r;
		if (n > (1ull << 19))
			n = 1ull << 19;
		total += (n + 7) / 8 * 8;
	}
	return total;
}

static CUdeviceptr up(uint64_t bytes, enum vtc_cat cat)
{
	CUdeviceptr p = vtc_cache_alloc(&C, bytes, cat);
	vtc_htod(0, p, bytes);
	return p;
}

static CUdeviceptr act(uint64_t bytes)
{
	return vtc_cache_alloc(&C, bytes, VTC_ACTIVATIONS);
}

int main(int argc, char **argv)
{
	vtc_start(argc, argv, "nerf_hashgrid_preload", 1, VTC_GETPROC);
	vtc_cache_init(&C, 0);
	uint64_t pb[NPARAM] = {
	    embed_entries() * 2 * 4, /* embeddings */
	    32 * 64 * 4,             /* sigma net: 32 -> 64 */
	    64 * 16 * 4,             /* 64 -> 1 + 15 geo features */
	    31 * 64 * 4,             /* color net: 16 (SH) + 15 -> 64 */
	    64 * 64 * 4,
	    64 * 3 * 4,
	    17 * 4, /* offsets (a buffer, kept with the parameters) */
	    0,
	};
	CUdeviceptr p[NPARAM] = {0};
	for (int i = 0; i < 7; i++)
		p[i] = up(pb[i], VTC_WEIGHTS);
	CUdeviceptr grid = up(128ull * 128 * 128 * 4, VTC_WEIGHTS);
	CUdeviceptr bitfield = up(128ull * 128 * 128 / 8, VTC_WEIGHTS);
	CUdeviceptr poses = up(NIMG * 16 * 4, VTC_DATASET);
	CUdeviceptr images = up(NIMG * IMG_BYTES, VTC_DATASET);
	CUdeviceptr g[NPARAM] = {0}, m[NPARAM] = {0}, v[NPARAM] = {0};
	CUdeviceptr scale = 0, growth = 0;
	for (int s = 0; s < STEPS; s++) {
		if (vtc_markers())
			vtc_step(s);
		CUdeviceptr inds = act(RAYS * 8), ro = act(RAYS * 12), rd = act(RAYS * 12);
		CUdeviceptr pix = act(RAYS * 4 * 2); /* torch.gather(images, 1, inds) */
		CUdeviceptr xyzs = act(RAYS * SAMPLES * 12), dirs = act(RAYS * SAMPLES * 12);
		CUdeviceptr deltas = act(RAYS * SAMPLES * 8), rays = act(RAYS * 12);
		CUdeviceptr feat = act(RAYS * SAMPLES * 32 * 2);
		CUdeviceptr h1 = act(RAYS * SAMPLES * 64 * 2), sig = act(RAYS * SAMPLES * 16 * 2);
		CUdeviceptr sh = act(RAYS * SAMPLES * 16 * 2), h2 = act(RAYS * SAMPLES * 64 * 2);
		CUdeviceptr rgb = act(RAYS * SAMPLES * 3 * 2);
		CUdeviceptr img = act(RAYS * 12), depth = act(RAYS * 4), wsum = act(RAYS * 4);
		CUdeviceptr loss = act(4);
		if (!scale) {
			scale = vtc_cache_alloc(&C, 4, VTC_OTHER);
			vtc_htod(0, scale, 4);
			growth = vtc_cache_alloc(&C, 4, VTC_OTHER);
			vtc_zero(0, growth, 4);
		}
		for (int i = 6; i >= 0; i--) {
			if (i == 6)
				continue; /* offsets: a buffer, no grad */
			if (!g[i])
				g[i] = vtc_cache_alloc(&C, pb[i], VTC_GRADIENTS);
		}
		CUdeviceptr gb = act(RAYS * SAMPLES * 64 * 2);
		CUdeviceptr gf = act(RAYS * SAMPLES * 32 * 2);
		vtc_cache_free(&C, gb);
		vtc_cache_free(&C, gf);
		CUdeviceptr found_inf = vtc_cache_alloc(&C, 4, VTC_OTHER);
		if (!m[0])
			for (int i = 0; i < 6; i++) {
				m[i] = vtc_cache_alloc(&C, pb[i], VTC_OPTIMIZER);
				vtc_zero(0, m[i], pb[i]);
				v[i] = vtc_cache_alloc(&C, pb[i], VTC_OPTIMIZER);
				vtc_zero(0, v[i], pb[i]);
			}
		vtc_dtoh(0, found_inf, 4);
		vtc_cache_free(&C, found_inf);
		vtc_dtoh(0, loss, 4);
		CUdeviceptr per_step[] = {inds, ro,  rd, pix, xyzs, dirs, deltas, rays, feat,
		                          h1,   sig, sh, h2,  rgb,  img,  depth,  wsum, loss};
		for (unsigned i = 0; i < sizeof per_step / sizeof per_step[0]; i++)
			vtc_cache_free(&C, per_step[i]);
		for (int i = 0; i < 6; i++)
			vtc_zero(0, g[i], pb[i]); /* zero_grad(set_to_none=False) in torch-ngp */
		if (s % 16 == 15) {               /* update_extra_state: the density grid */
			CUdeviceptr coords = act(128ull * 128 * 128 * 12);
			CUdeviceptr sigmas = act(128ull * 128 * 128 * 4);
			CUdeviceptr tmp_grid = act(128ull * 128 * 128 * 4);
			vtc_cache_free(&C, coords);
			vtc_cache_free(&C, sigmas);
			vtc_dtod(0, grid, tmp_grid, 128ull * 128 * 128 * 4);
			vtc_cache_free(&C, tmp_grid);
		}
	}
	for (int i = 0; i < 7; i++) {
		vtc_cache_free(&C, p[i]);
		if (i < 6) {
			vtc_cache_free(&C, g[i]);
			vtc_cache_free(&C, m[i]);
			vtc_cache_free(&C, v[i]);
		}
	}
	vtc_cache_free(&C, grid);
	vtc_cache_free(&C, bitfield);
	vtc_cache_free(&C, poses);
	vtc_cache_free(&C, images);
	vtc_cache_free(&C, scale);
	vtc_cache_free(&C, growth);
	vtc_cache_empty(&C);
	vtc_line("finding whole_dataset_upload 0 %llu", (unsigned long long)(NIMG * IMG_BYTES));
	vtc_line("finding whole_dataset_upload 0 %d", NIMG * 16 * 4);
	vtc_line("no_finding prefetch_depth");
	vtc_line("steps 0 %d", STEPS);
	vtc_finish();
	return 0;
}
