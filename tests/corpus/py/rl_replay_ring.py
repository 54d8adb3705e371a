#!/usr/bin/env python3
"""DQN with its replay buffer on the device, as TorchRL's
ReplayBuffer(storage=LazyTensorStorage(N, device="cuda")) keeps it
(PYTORCH_NO_CUDA_MEMORY_CACHING=1: one cudaMalloc per tensor). The storage
is allocated lazily at the first add (LazyTensorStorage._init: one tensor
per key, capacity rows each: observations 48 MiB, next observations 48 MiB,
actions, rewards and dones small) and every environment step writes one
transition into row (cursor % capacity) with small host-to-device copies
(LazyTensorStorage.set). Acting: the observation is uploaded on its own
(torch.as_tensor(obs, device=...)) for the policy's forward. Learning starts
after 64 environment steps, then every 2nd step: a minibatch of 32 rows is
gathered on the device (ReplayBuffer.sample -> storage.get: index_select),
the Q-net's forward and backward (.grad made by the first backward and kept:
zero_grad(set_to_none=False)), Adam (exp_avg/exp_avg_sq at the first step);
every 8th optimizer step the target net is synced in place
(target.load_state_dict(policy.state_dict()): device-to-device copies). The
target net is copy.deepcopy(policy) at start (allocated, copied on the
device). No markers, driver by dlsym.

Ground truth for the ring: dataset. It holds the training data: every
transition the learner will sample from, sampled at random many times over
its life, filled from the host a row at a time as the environment produces
it. It is not prefetch (no slot holds one step's batch, consumed once) nor
activations. No whole_dataset_upload is true: it never arrives whole in one
copy (one small copy per key per step: a device replay buffer is meant to
grow this way, and advice to stream it instead would be wrong). The uploaded
observation is a per-step input: prefetch, depth 1 (one 28 KiB observation).
Minibatches gathered on the device are activations (the corpus's
convention). Policy and target nets weights (the target the policy's size),
policy grads gradients, Adam optimizer; 96 optimizer steps."""
import vtc

job = vtc.Job("rl_replay_ring", "dlsym", __doc__)
MIB, KIB = vtc.MIB, vtc.KIB
OBS = 84 * 84 * 4          # 4 stacked 84x84 uint8 frames
CAPACITY = 1785            # rows: 48 MiB of observations
QNET = (3 * MIB, 12 * MIB, 6 * MIB, 24 * KIB)
ENV_STEPS, LEARNING_STARTS, TRAIN_FREQ, TARGET_EVERY, BATCH = 256, 64, 2, 8, 32


class LazyTensorStorage:
    KEYS = (("observation", OBS), ("next_observation", OBS), ("action", 8),
            ("reward", 4), ("done", 1))

    def __init__(self, capacity):
        self.capacity = capacity
        self.buf = None
        self.cursor = 0

    def _init(self):
        self.buf = {k: (job.mem_alloc(0, n * self.capacity, "dataset"), n) for k, n in self.KEYS}

    def set(self, row, pinned):
        if self.buf is None:
            self._init()
        for p, n in self.buf.values():
            job.htod(0, p + row * n, n, src=pinned)

    def get(self, count):
        return job.mem_alloc(0, count * OBS, "activations")  # index_select of the rows


class ReplayBuffer:
    def __init__(self, storage):
        self.storage = storage

    def add(self, pinned):
        self.storage.set(self.storage.cursor % self.storage.capacity, pinned)
        self.storage.cursor += 1

    def sample(self, count):
        obs = self.storage.get(count)
        nxt = self.storage.get(count)
        return obs, nxt


class QNetwork:
    def __init__(self):
        self.params = []

    def to(self):
        for n in QNET:
            p = job.mem_alloc(0, n, "weights")
            job.htod(0, p, n)
            self.params.append(p)
        return self

    def forward(self, x, rows):
        return [job.mem_alloc(0, rows * n, "activations") for n in (32 * KIB, 16 * KIB)]


def deepcopy(net):
    twin = QNetwork()
    for p, n in zip(net.params, QNET):
        q = job.mem_alloc(0, n, "weights")
        job.dtod(0, q, p, n)
        twin.params.append(q)
    return twin


def load_state_dict(target, policy):
    for q, p, n in zip(target.params, policy.params, QNET):
        job.dtod(0, q, p, n)


class Adam:
    def __init__(self):
        self.state = []

    def step(self):
        if not self.state:
            for n in QNET:
                for _ in range(2):
                    p = job.mem_alloc(0, n, "optimizer")
                    job.zero(0, p, n)
                    self.state.append(p)


def act(policy, pinned):
    obs = job.mem_alloc(0, OBS, "prefetch")  # torch.as_tensor(obs, device="cuda")
    job.htod(0, obs, OBS, src=pinned)
    for a in policy.forward(obs, 1):
        job.mem_free(0, a)
    job.mem_free(0, obs)


def learn(policy, target, rb, opt, grads):
    obs, nxt = rb.sample(BATCH)
    tq = target.forward(nxt, BATCH)
    q = policy.forward(obs, BATCH)
    if not grads:  # loss.backward(): .grad kept from the first on
        grads.extend(job.mem_alloc(0, n, "gradients") for n in QNET)
    for t in q + tq + [nxt, obs]:
        job.mem_free(0, t)
    opt.step()


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    policy = QNetwork().to()
    target = deepcopy(policy)
    rb = ReplayBuffer(LazyTensorStorage(CAPACITY))
    opt, grads = Adam(), []
    pinned = job.pinned(OBS)
    updates = 0
    for t in range(ENV_STEPS):
        act(policy, pinned)
        rb.add(pinned)
        if t >= LEARNING_STARTS and t % TRAIN_FREQ == 0:
            learn(policy, target, rb, opt, grads)
            updates += 1
            if updates % TARGET_EVERY == 0:
                load_state_dict(target, policy)
    for p in opt.state + grads + policy.params + target.params:
        job.mem_free(0, p)
    for p, _ in rb.storage.buf.values():
        job.mem_free(0, p)
    job.line("no_finding whole_dataset_upload")
    job.line("finding prefetch_depth 0 1 %d" % OBS)
    job.line("steps 0 %d" % updates)
    job.finish()


main()
