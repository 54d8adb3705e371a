#!/usr/bin/env python3
"""Soft Actor-Critic with skrl on a gymnasium vector environment
(Humanoid-shaped: 376 observation and 17 action floats, 8 environments
stepped on the host), its replay memory on the GPU: skrl's
`RandomMemory(memory_size=20000, num_envs=8, device="cuda:0")`, the
`SequentialTrainer` for 600 timesteps, learning after 200, batch 256,
one gradient step per timestep, under PYTORCH_NO_CUDA_MEMORY_CACHING=1
(one cudaMalloc / cudaFree per tensor).

What is modelled (sources: skrl memories/torch/base.py `Memory.create_tensor`
(one `torch.zeros((memory_size, num_envs, size), device=...)` per name,
float tensors filled with NaN on the device: allocated whole, never
uploaded), `add_samples` (for a batch of `num_envs` samples
`self.tensors[name][self.memory_index].copy_(tensor)`: one
device-to-device copy per name at the row's offset), `sample_by_index`
(`self.tensors_view[name][indexes]`: a gather per name, the numpy
`indexes` converted and copied to the device at each indexing);
memories/torch/random.py `RandomMemory.sample` (`np.random.choice` on the
host); agents/torch/sac/sac.py (`__init__`: target critics frozen and
hard-updated by `update_parameters(polyak=1)` (device copies),
`log_entropy_coefficient = torch.log(torch.ones(1, device) * value)`,
three `torch.optim.Adam`s; `init`: the memory's tensors `states`,
`next_states`, `actions`, `rewards`, `terminated`; `act`;
`record_transition`; `_update`: the sampled batch, target values under
`no_grad`, the critic loss, `critic_optimizer.zero_grad()` (set_to_none)
/ `backward` / `step`, the policy loss (its backward also reaches the
critics' `.grad`s), the entropy loss, `update_parameters(polyak=0.005)`:
`parameters.data.mul_(1 - polyak)`, `add_(polyak * model_parameters.data)`,
a temporary per parameter); agents/torch/base.py (`Agent.__init__`:
`model.to(model.device)` per model, in the models dict's order;
`record_transition`: `_cumulative_rewards` / `_cumulative_timesteps`
made by `zeros_like` at the first call, `(terminated + truncated)
.nonzero()` per step); models/torch/gaussian.py (`_clip_actions_min` /
`_max` by `torch.tensor(..., device=...)`, `act`: log_std clamp, `Normal`
rsample, clamp, log_prob sum); envs/wrappers/torch/gymnasium_envs.py
`step` (`actions.cpu().numpy()`; observation, reward, terminated and
truncated each made by `torch.tensor(..., device=self.device)`: an
upload); trainers/torch/sequential.py `single_agent_train` (`states =
next_states` after `post_interaction`, so the step's observations and
the next ones are both alive); torch/optim/adam.py `_multi_tensor_adam`
(`exp_avg` / `exp_avg_sq` at the first step, `step` on the host, a
`_foreach_sqrt` temporary per parameter)). No markers (skrl calls none),
driver by dlsym.

Truth: the memory's five tensors dataset, filled a row at a time by
device copies of per-step uploads: NO whole_dataset_upload; the
observation uploaded at each environment step prefetch (depth 2: the
states being acted on and the next states, 12,032 B each); reward,
terminated and truncated uploads, the per-indexing index uploads, the
clip bounds and the reward trackers other; policy, critics, target
critics and `log_entropy_coefficient` weights; `.grad`s gradients; Adam
states optimizer; gathered batches, actions, forward / backward tensors,
Adam's and the polyak update's temporaries activations. 400 updates
(each one critic, one policy and one entropy step) counted as 400 steps.
Coincidences: each uploaded index array (256 int64, 2,048 B, other) is a
512-unit bias (weights), its `.grad` and its Adam states; the actions
gathered for a batch (256 x 17 floats, 17,408 B, activations) are the
policy's last weight (256 x 17, weights), its `.grad` and Adam states;
`terminated` and `truncated` uploads (8 B) are one size."""
import vtc

job = vtc.Job("skrl_sac_random_memory", "dlsym", __doc__)
F32 = 4
OBS, ACT, ENVS, MEM = 376, 17, 8, 20000
BATCH, TIMESTEPS, LEARNING_STARTS = 256, 600, 200
H1, H2 = 512, 256
ROW = {"states": OBS * F32, "next_states": OBS * F32, "actions": ACT * F32,
       "rewards": F32, "terminated": 1}
NAMES = ["states", "actions", "rewards", "next_states", "terminated"]


def alloc(n, cat="activations"):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def upload(n, cat):
    p = alloc(n, cat)
    job.htod(0, p, n)
    return p


class MLP:
    """A skrl Model: Linear(in, 512) ReLU Linear(512, 256) ReLU Linear(256, out)."""

    def __init__(self, fin, fout, log_std=False):
        self.sizes = [fin * H1 * F32, H1 * F32, H1 * H2 * F32, H2 * F32, H2 * fout * F32, fout * F32]
        if log_std:
            self.sizes.append(fout * F32)            # log_std_parameter
        self.fin, self.fout = fin, fout
        self.ptrs = []
        self.grads = []

    def to(self):
        self.ptrs = [upload(n, "weights") for n in self.sizes]

    def forward(self, rows, grad):
        """Returns (output, saved)."""
        saved = []
        if self.fin == OBS + ACT:
            saved.append(alloc(rows * self.fin * F32))   # torch.cat([states, taken_actions])
        h1 = alloc(rows * H1 * F32)
        r1 = alloc(rows * H1 * F32)
        h2 = alloc(rows * H2 * F32)
        r2 = alloc(rows * H2 * F32)
        out = alloc(rows * self.fout * F32)
        if grad:
            saved += [r1, r2]
            free(h1, h2)
        else:
            free(h1, r1, h2, r2, *saved)
            saved = []
        return out, saved

    def backward(self, rows, g, saved):
        """A .grad per parameter (made if absent), activation grads."""
        new = not self.grads
        order = list(reversed(range(len(self.sizes))))
        for i in order:
            if new:
                self.grads.insert(0, alloc(self.sizes[i], "gradients"))
            if i in (4, 2):
                ga = alloc(rows * (H2 if i == 4 else H1) * F32)
                free(g)
                g = ga
        gi = alloc(rows * self.fin * F32)
        free(g, *saved)
        return gi

    def zero_grad(self):
        free(*self.grads)
        self.grads = []


class Policy(MLP):
    def __init__(self):
        super().__init__(OBS, ACT, log_std=True)
        self.clip = []

    def act(self, rows, grad):
        """GaussianMixin.act: actions and log_prob."""
        mean, saved = self.forward(rows, grad)
        ls = alloc(ACT * F32)                        # clamp(log_std)
        std = alloc(ACT * F32)                       # exp
        eps = alloc(rows * ACT * F32)                # rsample: normal_
        a = alloc(rows * ACT * F32)                  # mean + eps * std
        ac = alloc(rows * ACT * F32)                 # clamp to the action bounds
        lp = alloc(rows * ACT * F32)                 # log_prob
        lps = alloc(rows * F32)                      # .sum(-1, keepdim=True)
        free(a)
        if grad:
            saved += [mean, ls, std, eps, lp]
        else:
            free(mean, ls, std, eps, lp)
        return ac, lps, saved


class Adam:
    def __init__(self, models):
        self.models = models
        self.state = None

    def step(self):
        sizes = [n for m in self.models for n in m.sizes]
        if self.state is None:
            self.state = [alloc(n, "optimizer") for n in sizes for _ in (0, 1)]
        tmp = [alloc(n) for n in sizes]              # _foreach_sqrt
        free(*tmp)


class Scalar:
    """log_entropy_coefficient and its Adam."""

    def __init__(self):
        ones = alloc(F32)                            # torch.ones(1, device)
        mul = alloc(F32)                             # * initial value
        self.p = alloc(F32, "weights")               # torch.log(...)
        free(ones, mul)
        self.sizes = [F32]
        self.grads = []
        self.state = None
        self.coef = None


def update_parameters(target, source, polyak):
    for dst, src, n in zip(target.ptrs, source.ptrs, target.sizes):
        if polyak == 1:
            job.dtod(0, dst, src, n)
        else:
            tmp = alloc(n)                           # polyak * model_parameters.data
            free(tmp)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    policy = Policy()
    policy.clip = [upload(ACT * F32, "other"), upload(ACT * F32, "other")]
    critics = [MLP(OBS + ACT, 1) for _ in range(4)]  # critic_1, critic_2, target_1, target_2
    for m in [policy] + critics:                     # Agent.__init__: model.to(device)
        m.to()
    c1, c2, t1, t2 = critics
    update_parameters(t1, c1, 1)                     # hard update
    update_parameters(t2, c2, 1)
    ent = Scalar()
    policy_opt, critic_opt = Adam([policy]), Adam([c1, c2])
    # agent.init(): the memory's tensors, NaN-filled on the device
    memory = {}
    for name in ("states", "next_states", "actions", "rewards", "terminated"):
        memory[name] = alloc(MEM * ENVS * ROW[name], "dataset")   # fill_(nan): a kernel
    states = upload(ENVS * OBS * F32, "prefetch")    # env.reset()
    actions = rewards = terminated = truncated = None
    cumulative = None
    index = 0
    filled = 0
    updates = 0
    for timestep in range(TIMESTEPS):
        # act under no_grad
        new_actions, lps, _s = policy.act(ENVS, grad=False)
        free(lps)
        if actions is not None:
            free(actions)
        actions = new_actions
        job.dtoh(0, actions, ENVS * ACT * F32)       # actions.cpu().numpy()
        nxt = upload(ENVS * OBS * F32, "prefetch")   # env.step -> torch.tensor(obs, device)
        rw = upload(ENVS * F32, "other")
        te = upload(ENVS, "other")
        tr = upload(ENVS, "other")
        if rewards is not None:
            free(rewards, terminated, truncated)
        rewards, terminated, truncated = rw, te, tr
        # record_transition: trackers, then add_samples
        if cumulative is None:
            cumulative = [alloc(ENVS * F32, "other"), alloc(ENVS * F32, "other")]
        done = alloc(ENVS)                           # terminated + truncated
        nz = alloc(8)                                # .nonzero()
        free(done, nz)
        for name, src in (("states", states), ("actions", actions), ("rewards", rewards),
                          ("next_states", nxt), ("terminated", terminated)):
            job.dtod(0, memory[name] + index * ENVS * ROW[name], src, ENVS * ROW[name])
        index = (index + 1) % MEM
        filled = min(filled + 1, MEM)
        # post_interaction -> _update
        if timestep >= LEARNING_STARTS:
            sample(memory, filled, policy, c1, c2, t1, t2, ent, policy_opt, critic_opt)
            updates += 1
        free(states)                                 # states = next_states
        states = nxt
    free(actions, rewards, terminated, truncated, states, *cumulative)
    free(*[memory[n] for n in memory])
    for m in [policy] + critics:
        free(*m.ptrs, *m.grads)
    free(*policy.clip, ent.p, ent.coef, *ent.grads, *ent.state, *policy_opt.state, *critic_opt.state)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 2 %d" % (ENVS * OBS * F32))
    job.line("steps 0 %d" % updates)
    job.finish()


def sample(memory, filled, policy, c1, c2, t1, t2, ent, policy_opt, critic_opt):
    """SAC._update with one gradient step."""
    batch = {}
    for name in NAMES:                               # sample_by_index
        idx = upload(BATCH * 8, "other")             # numpy indexes -> device
        g = alloc(BATCH * ROW[name])                 # tensors_view[name][indexes]
        free(idx)
        batch[name] = g
    with_grad = True
    # targets under no_grad
    na, nlp, _s = policy.act(BATCH, grad=False)
    q1, _s1 = t1.forward(BATCH, grad=False)
    q2, _s2 = t2.forward(BATCH, grad=False)
    mn = alloc(BATCH * F32)                          # torch.min
    ent_term = alloc(BATCH * F32)                    # coefficient * next_log_prob
    tq = alloc(BATCH * F32)
    free(mn, ent_term, q1, q2, na, nlp)
    nd = alloc(BATCH)                                # dones.logical_not()
    d1 = alloc(BATCH * F32)
    d2 = alloc(BATCH * F32)
    tv = alloc(BATCH * F32)                          # target_values
    free(nd, d1, d2, tq)
    # critic loss
    v1, s1 = c1.forward(BATCH, grad=with_grad)
    v2, s2 = c2.forward(BATCH, grad=with_grad)
    l1, l2 = alloc(F32), alloc(F32)
    closs = alloc(F32)
    c1.zero_grad()                                   # critic_optimizer.zero_grad()
    c2.zero_grad()
    g1 = alloc(BATCH * F32)
    g2 = alloc(BATCH * F32)
    free(c1.backward(BATCH, g1, s1), c2.backward(BATCH, g2, s2))
    free(v1, v2, l1, l2, closs, tv)
    critic_opt.step()
    # policy loss
    a, lp, sp = policy.act(BATCH, grad=with_grad)
    v1, s1 = c1.forward(BATCH, grad=with_grad)
    v2, s2 = c2.forward(BATCH, grad=with_grad)
    mn = alloc(BATCH * F32)
    el = alloc(BATCH * F32)
    diff = alloc(BATCH * F32)
    ploss = alloc(F32)
    free(mn, el)
    policy.zero_grad()                               # policy_optimizer.zero_grad()
    gv = alloc(BATCH * F32)
    ga1 = c1.backward(BATCH, alloc(BATCH * F32), s1)  # the critics' .grads accumulate
    ga2 = c2.backward(BATCH, alloc(BATCH * F32), s2)
    gact = alloc(BATCH * ACT * F32)
    free(ga1, ga2, gv)
    free(policy.backward(BATCH, gact, sp))
    free(v1, v2, diff, ploss)
    policy_opt.step()
    # entropy
    t = alloc(BATCH * F32)                           # (log_prob + target_entropy).detach()
    m = alloc(BATCH * F32)
    eloss = alloc(F32)
    free(t, m)
    if ent.grads:
        free(*ent.grads)                             # entropy_optimizer.zero_grad()
    ent.grads = [alloc(F32, "gradients")]
    free(eloss)
    if ent.state is None:
        ent.state = [alloc(F32, "optimizer"), alloc(F32, "optimizer")]
    sq = alloc(F32)
    free(sq)
    coef = alloc(F32)                                # _entropy_coefficient = exp(...)
    if ent.coef:
        free(ent.coef)
    ent.coef = coef
    free(a, lp)
    update_parameters(t1, c1, 0.005)
    update_parameters(t2, c2, 0.005)
    free(*[batch[n] for n in NAMES])


main()
