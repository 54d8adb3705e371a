#!/usr/bin/env python3
"""CleanRL `ppo_atari.py` (Breakout, 8 envs, 128 steps per rollout, 4
minibatches, 4 update epochs, Adam eps 1e-5, clip_grad_norm_ 0.5), 3
iterations, under PYTORCH_NO_CUDA_MEMORY_CACHING=1 (one cudaMalloc per
tensor, cudaFree when it dies).

What is modelled (sources read: cleanrl/ppo_atari.py: the storage
`obs = torch.zeros((num_steps, num_envs) + obs_shape).to(device)` and
`actions`, `logprobs`, `rewards`, `dones`, `values` the same way (zeros
made on the host, each copied whole to the device once, then written a row
per environment step: `obs[step] = next_obs`, `values[step] =
value.flatten()`, `actions[step] = action`, `rewards[step] =
torch.tensor(reward).to(device).view(-1)`); `next_obs =
torch.Tensor(next_obs).to(device)` each step (the previous device
observation dies when `envs.step` rebinds the name to the host array);
`action.cpu()`; the GAE loop under no_grad (`advantages =
torch.zeros_like(rewards)`, per-step scalar temporaries, `returns =
advantages + values`); the update: `b_obs[mb_inds]` etc. index the
flattened storage with a host numpy index (torch copies the index to the
device for each indexing), `b_actions.long()` a fresh int64 copy per
minibatch, `optimizer.zero_grad()` (set_to_none by default: grads freed,
remade by the next backward), `clip_grad_norm_` (per-parameter norms and
the total), `optim.Adam` (torch/optim/adam.py `_init_group`:
exp_avg / exp_avg_sq made at the first step, `step` a host tensor;
`_multi_tensor_adam` `_foreach_sqrt` temporaries); Agent: three convs,
512-unit linear, actor (4 actions) and critic heads).
Markers on (one per minibatch update), driver by cuGetProcAddress.

Truth: the six storage tensors dataset (the data every minibatch is drawn
from, rewritten a row at a time each rollout) and the advantages and
returns made from them on the device dataset as well; NO
whole_dataset_upload: the one whole copy of each storage tensor carries
zeros, not data (the rollout data arrive a row per environment step); the
per-step observation and done uploads prefetch (depth 1: the old one dies
before the new upload); reward uploads and the minibatch index uploads
other; agent parameters weights; grads gradients; Adam state optimizer;
forward tensors (acting and learning), gathered minibatches, GAE and
norm temporaries activations. 48 optimizer steps. Coincidences: the five
small storage tensors are one size (128 x 8 float32 = 4,096 B), as are
the advantages and returns; a minibatch index upload (256 int64 =
2,048 B) is exactly the critic weight and the fc bias (512 float32); the
obs storage (115,605,504 B) is 128 observation uploads; Adam's state and
the grads are their parameters' sizes."""
import vtc

job = vtc.Job("ppo_rollout_storage", "getproc", __doc__)
ENVS, NSTEPS, ITERS, EPOCHS, NMB = 8, 128, 3, 4, 4
OBS1 = 4 * 84 * 84 * 4                # one env's observation, float32
OBS_STEP = ENVS * OBS1                # torch.Tensor(next_obs): 903,168 B
BATCH = ENVS * NSTEPS                 # 1024
MB = BATCH // NMB                     # 256
SMALL = NSTEPS * ENVS * 4             # 4,096 B
PARAMS = [32 * 4 * 8 * 8 * 4, 32 * 4, 64 * 32 * 4 * 4 * 4, 64 * 4, 64 * 64 * 3 * 3 * 4, 64 * 4,
          3136 * 512 * 4, 512 * 4, 512 * 4 * 4, 4 * 4, 512 * 4, 4]


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def to_device(n, cat):
    return job.upload(0, n, cat)


class Agent:
    def __init__(self):
        self.params = [to_device(n, "weights") for n in PARAMS]  # Agent(envs).to(device)
        self.grads = None

    def forward(self, rows, keep):
        x = alloc(rows * OBS1, "activations")                   # x / 255.0
        c1 = alloc(rows * 32 * 20 * 20 * 4, "activations")
        c2 = alloc(rows * 64 * 9 * 9 * 4, "activations")
        c3 = alloc(rows * 64 * 7 * 7 * 4, "activations")
        hid = alloc(rows * 512 * 4, "activations")
        logits = alloc(rows * 4 * 4, "activations")
        act = alloc(rows * 8, "activations")                     # probs.sample()
        logp = alloc(rows * 4, "activations")
        ent = alloc(rows * 4, "activations")
        val = alloc(rows * 4, "activations")
        saved = [x, c1, c2, c3, hid, logits]
        if not keep:
            free(*saved)
            saved = []
        return saved, act, logp, ent, val

    def backward(self, saved):
        self.grads = [alloc(n, "gradients") for n in reversed(PARAMS)][::-1]
        g = alloc(MB * 64 * 9 * 9 * 4, "activations")
        g2 = alloc(MB * 32 * 20 * 20 * 4, "activations")
        free(g, g2, *saved)

    def zero_grad(self):
        if self.grads is not None:
            free(*self.grads)
            self.grads = None


class Adam:
    def __init__(self):
        self.state = None

    def step(self):
        if self.state is None:  # _init_group: exp_avg, exp_avg_sq per param
            self.state = []
            for n in PARAMS:
                for _ in range(2):
                    s = alloc(n, "optimizer")
                    job.zero(0, s, n)
                    self.state.append(s)
        tmp = [alloc(n, "activations") for n in PARAMS]  # _foreach_sqrt(exp_avg_sq)
        free(*tmp)


def clip_grad_norm():
    norms = [alloc(4, "activations") for _ in PARAMS]
    total = alloc(4, "activations")
    coef = alloc(4, "activations")
    free(*norms)
    free(total, coef)


def main():
    job.start(markers_default=True)
    job.open_devices(1)
    agent = Agent()
    opt = Adam()
    storage = {"obs": to_device(NSTEPS * OBS_STEP, "dataset")}
    for key in ("actions", "logprobs", "rewards", "dones", "values"):
        storage[key] = to_device(SMALL, "dataset")
    next_obs = to_device(OBS_STEP, "prefetch")       # envs.reset()
    next_done = to_device(ENVS * 4, "prefetch")      # torch.zeros(num_envs).to(device)
    advantages = returns = None
    update = 0
    for _it in range(ITERS):
        for step in range(NSTEPS):
            job.dtod(0, storage["obs"] + step * OBS_STEP, next_obs, OBS_STEP)
            job.dtod(0, storage["dones"] + step * ENVS * 4, next_done, ENVS * 4)
            _saved, act, logp, ent, val = agent.forward(ENVS, keep=False)
            flat = alloc(ENVS * 4, "activations")    # value.flatten()
            job.dtod(0, storage["values"] + step * ENVS * 4, flat, ENVS * 4)
            job.dtod(0, storage["actions"] + step * ENVS * 4, act, ENVS * 4)
            job.dtod(0, storage["logprobs"] + step * ENVS * 4, logp, ENVS * 4)
            free(flat, ent, val, logp)
            job.dtoh(0, act, ENVS * 8)               # action.cpu().numpy()
            free(act)
            free(next_obs, next_done)                # names rebound to host arrays
            rew = to_device(ENVS * 8, "other")       # torch.tensor(reward).to(device)
            rew32 = alloc(ENVS * 4, "activations")   # copy into rewards[step] (float32)
            job.dtod(0, storage["rewards"] + step * ENVS * 4, rew32, ENVS * 4)
            free(rew32, rew)
            next_obs = to_device(OBS_STEP, "prefetch")
            next_done = to_device(ENVS * 4, "prefetch")
        # bootstrap value, GAE (no_grad)
        _s, act, logp, ent, nv = agent.forward(1 * ENVS, keep=False)
        free(act, logp, ent)
        new_adv = alloc(SMALL, "dataset")            # zeros_like(rewards)
        if advantages is not None:
            free(advantages)
        advantages = new_adv
        job.zero(0, advantages, SMALL)
        for _t in range(NSTEPS):
            nonterm = alloc(ENVS * 4, "activations")  # 1.0 - dones[t + 1]
            delta = alloc(ENVS * 4, "activations")
            last = alloc(ENVS * 4, "activations")
            job.dtod(0, advantages + _t * ENVS * 4, last, ENVS * 4)
            free(nonterm, delta, last)
        free(nv)
        new_ret = alloc(SMALL, "dataset")           # advantages + values
        if returns is not None:
            free(returns)
        returns = new_ret
        for _epoch in range(EPOCHS):
            for _mb in range(NMB):
                job.step(update)
                idx = to_device(MB * 8, "other")    # b_obs[mb_inds]
                mb_obs = alloc(MB * OBS1, "activations")
                free(idx)
                along = alloc(BATCH * 8, "activations")  # b_actions.long()
                idx = to_device(MB * 8, "other")
                mb_act = alloc(MB * 8, "activations")
                free(idx, along)
                saved, act, newlogp, ent, newval = agent.forward(MB, keep=True)
                free(act)
                gathered = []
                for _key in ("logprobs", "advantages", "returns", "values"):
                    idx = to_device(MB * 8, "other")
                    gathered.append(alloc(MB * 4, "activations"))
                    free(idx)
                ratio = alloc(MB * 4, "activations")
                kl = alloc(4, "activations")
                job.dtoh(0, kl, 4)                  # clipfracs ... .item()
                loss_parts = [alloc(MB * 4, "activations") for _ in range(4)]
                loss = alloc(4, "activations")
                free(kl, *loss_parts)
                agent.zero_grad()
                saved += [mb_obs, mb_act, ratio, newlogp, ent, newval] + gathered
                agent.backward(saved)
                clip_grad_norm()
                opt.step()
                free(loss)
                update += 1
        job.dtoh(0, storage["values"], SMALL)        # b_values.cpu(), b_returns.cpu()
        job.dtoh(0, returns, SMALL)
    agent.zero_grad()
    free(next_obs, next_done, advantages, returns, *storage.values())
    free(*opt.state, *agent.params)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % (OBS_STEP + ENVS * 4))
    job.line("steps 0 %d" % update)
    job.finish()


main()
