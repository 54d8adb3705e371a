/* Treap over a node array, with a start -> node hash and dead nodes (see
 * model_intervals.h). Index 0 is the null node so children are plain
 * uint32_t and the array can be realloc'd freely. */
#include "model_intervals.h"

#include <stdlib.h>
#include <string.h>

enum node_state { NODE_LIVE = 0, NODE_DEAD, NODE_FREE };

struct vt_ival_node {
	struct vt_ival iv;
	uint32_t left, right;
	uint32_t prev, next; /* neighbours in start order among the tree's nodes */
	uint32_t prio;
	uint8_t state; /* enum node_state */
};

/* Sweep the dead nodes once there are more of them than this beyond the
 * live ones: a bound on memory, paid once per that many erases. */
#define DEAD_SLACK 1024u

void vt_ival_init(struct vt_ival_map *m)
{
	memset(m, 0, sizeof *m);
	m->rng = 0x9e3779b97f4a7c15ull;
}

void vt_ival_destroy(struct vt_ival_map *m)
{
	free(m->nodes);
	free(m->index);
	memset(m, 0, sizeof *m);
}

static uint32_t next_prio(struct vt_ival_map *m)
{
	/* xorshift64*: deterministic, so runs are reproducible */
	m->rng ^= m->rng >> 12;
	m->rng ^= m->rng << 25;
	m->rng ^= m->rng >> 27;
	return (uint32_t)((m->rng * 0x2545f4914f6cdd1dull) >> 32);
}

/* ---- the start -> node hash (linear probing) --------------------------- */

static uint32_t home_slot(const struct vt_ival_map *m, uint64_t start)
{
	return (uint32_t)((start * 0x9e3779b97f4a7c15ull) >> 32) & (m->slots - 1);
}

/* The slot holding start's node, or the empty slot where it would go. */
static uint32_t *index_slot(const struct vt_ival_map *m, uint64_t start)
{
	uint32_t i = home_slot(m, start);
	while (m->index[i] && m->nodes[m->index[i]].iv.start != start)
		i = (i + 1) & (m->slots - 1);
	return &m->index[i];
}

static uint32_t index_find(const struct vt_ival_map *m, uint64_t start)
{
	return m->slots ? *index_slot(m, start) : 0;
}

/* Take the slot of start's node out, moving later entries of its probe run
 * back so that every one stays reachable from its home slot. */
static void index_remove(struct vt_ival_map *m, uint64_t start)
{
	uint32_t mask = m->slots - 1;
	uint32_t hole = (uint32_t)(index_slot(m, start) - m->index);
	for (uint32_t i = (hole + 1) & mask; m->index[i]; i = (i + 1) & mask) {
		uint32_t home = home_slot(m, m->nodes[m->index[i]].iv.start);
		/* may it move into the hole? only if the hole lies on its way from home */
		if (((i - home) & mask) >= ((i - hole) & mask)) {
			m->index[hole] = m->index[i];
			hole = i;
		}
	}
	m->index[hole] = 0;
	m->in_index--;
}

/* Room for one more node in the hash (at most half full). 0 or -1. */
static int index_reserve(struct vt_ival_map *m)
{
	if ((m->in_index + 1) * 2 <= m->slots)
		return 0;
	uint32_t slots = m->slots ? m->slots * 2 : 64;
	uint32_t *index = calloc(slots, sizeof *index);
	if (!index)
		return -1;
	free(m->index);
	m->index = index;
	m->slots = slots;
	for (uint32_t n = 1; n < m->used; n++)
		if (m->nodes[n].state != NODE_FREE)
			*index_slot(m, m->nodes[n].iv.start) = n;
	return 0;
}

/* ---- the tree ---------------------------------------------------------- */

static uint32_t new_node(struct vt_ival_map *m, const struct vt_ival *iv)
{
	uint32_t n;
	if (m->free_head) {
		n = m->free_head;
		m->free_head = m->nodes[n].left;
	} else {
		if (m->used + 1 >= m->cap) {
			uint32_t cap = m->cap ? m->cap * 2 : 64;
			struct vt_ival_node *nodes = realloc(m->nodes, (size_t)cap * sizeof *nodes);
			if (!nodes)
				return 0;
			m->nodes = nodes;
			m->cap = cap;
			if (m->used == 0)
				m->used = 1; /* reserve the null node */
		}
		n = m->used++;
	}
	m->nodes[n].iv = *iv;
	m->nodes[n].left = m->nodes[n].right = 0;
	m->nodes[n].prev = m->nodes[n].next = 0;
	m->nodes[n].prio = next_prio(m);
	m->nodes[n].state = NODE_LIVE;
	return n;
}

/* Split the tree t into keys < key (l) and keys >= key (r). */
static void split(struct vt_ival_node *nd, uint32_t t, uint64_t key, uint32_t *l, uint32_t *r)
{
	while (t) {
		if (nd[t].iv.start < key) {
			*l = t;
			l = &nd[t].right;
			t = nd[t].right;
		} else {
			*r = t;
			r = &nd[t].left;
			t = nd[t].left;
		}
	}
	*l = *r = 0;
}

/* Merge a (all keys smaller) with b. */
static uint32_t merge(struct vt_ival_node *nd, uint32_t a, uint32_t b)
{
	uint32_t root = 0, *link = &root;
	while (a && b) {
		if (nd[a].prio > nd[b].prio) {
			*link = a;
			link = &nd[a].right;
			a = nd[a].right;
		} else {
			*link = b;
			link = &nd[b].left;
			b = nd[b].left;
		}
	}
	*link = a ? a : b;
	return root;
}

/* The node with the greatest start <= addr, dead or alive; 0 if none. */
static uint32_t floor_node(const struct vt_ival_map *m, uint64_t addr)
{
	uint32_t t = m->root, best = 0;
	while (t) {
		if (m->nodes[t].iv.start <= addr) {
			best = t;
			t = m->nodes[t].right;
		} else {
			t = m->nodes[t].left;
		}
	}
	return best;
}

/* Thread n into the start order, before it joins the tree (so the floor
 * below its start is its predecessor). */
static void link_in_order(struct vt_ival_map *m, uint32_t n)
{
	struct vt_ival_node *nd = m->nodes;
	uint64_t start = nd[n].iv.start;
	uint32_t prev = start ? floor_node(m, start - 1) : 0;
	uint32_t next = prev ? nd[prev].next : m->head;
	nd[n].prev = prev;
	nd[n].next = next;
	if (prev)
		nd[prev].next = n;
	else
		m->head = n;
	if (next)
		nd[next].prev = n;
}

static void unlink_in_order(struct vt_ival_map *m, uint32_t n)
{
	struct vt_ival_node *nd = m->nodes;
	if (nd[n].prev)
		nd[nd[n].prev].next = nd[n].next;
	else
		m->head = nd[n].next;
	if (nd[n].next)
		nd[nd[n].next].prev = nd[n].prev;
}

/* A new node for iv, in the tree and the hash (no node has its start). */
static int tree_insert(struct vt_ival_map *m, const struct vt_ival *iv)
{
	if (index_reserve(m) != 0)
		return -1;
	uint32_t n = new_node(m, iv);
	if (!n)
		return -1;
	link_in_order(m, n);
	/* One descent: down by key to where the new node's priority puts it,
	 * then split only the subtree below. The same tree as split + two
	 * merges of the whole (a treap's shape is fixed by keys and
	 * priorities), for a third of the node visits. */
	struct vt_ival_node *nd = m->nodes;
	uint32_t *link = &m->root;
	while (*link && nd[*link].prio > nd[n].prio)
		link = iv->start < nd[*link].iv.start ? &nd[*link].left : &nd[*link].right;
	split(nd, *link, iv->start, &nd[n].left, &nd[n].right);
	*link = n;
	*index_slot(m, iv->start) = n;
	m->in_index++;
	return 0;
}

/* Take a dead node out of the tree and the hash for good. */
static void tree_remove(struct vt_ival_map *m, uint32_t n)
{
	uint64_t start = m->nodes[n].iv.start;
	uint32_t *link = &m->root;
	while (*link != n)
		link = start < m->nodes[*link].iv.start ? &m->nodes[*link].left
		                                        : &m->nodes[*link].right;
	*link = merge(m->nodes, m->nodes[n].left, m->nodes[n].right);
	unlink_in_order(m, n);
	index_remove(m, start);
	m->nodes[n].state = NODE_FREE;
	m->nodes[n].left = m->free_head;
	m->free_head = n;
	m->dead--;
}

/* Out of line: every erase may call it, and inlined it gave each erase a
 * stack frame and saved registers (a quarter of the erase), where a sweep
 * comes once per DEAD_SLACK erases or more. */
static __attribute__((noinline)) void sweep_dead(struct vt_ival_map *m)
{
	for (uint32_t n = 1; n < m->used && m->dead; n++)
		if (m->nodes[n].state == NODE_DEAD)
			tree_remove(m, n);
}

/* ---- the map ----------------------------------------------------------- */

/* Put iv at node n, which holds iv's start: revive it if it was dead. */
static void revive(struct vt_ival_map *m, uint32_t n, const struct vt_ival *iv)
{
	if (m->nodes[n].state == NODE_DEAD) {
		m->dead--;
		m->count++;
	}
	m->nodes[n].iv = *iv;
	m->nodes[n].state = NODE_LIVE;
}

int vt_ival_insert(struct vt_ival_map *m, const struct vt_ival *iv)
{
	uint32_t n = index_find(m, iv->start);
	if (n) {
		revive(m, n, iv);
		return 0;
	}
	if (tree_insert(m, iv) != 0)
		return -1;
	m->count++;
	return 0;
}

int vt_ival_erase(struct vt_ival_map *m, uint64_t start, struct vt_ival *out)
{
	uint32_t n = index_find(m, start);
	if (!n || m->nodes[n].state != NODE_LIVE)
		return 0;
	if (out)
		*out = m->nodes[n].iv;
	m->nodes[n].state = NODE_DEAD;
	m->count--;
	m->dead++;
	if (m->dead > m->count + DEAD_SLACK)
		sweep_dead(m);
	return 1;
}

/* Dead nodes a lookup steps over before it takes them out of the tree: the
 * node of a free whose address is about to be handed out again is better
 * left for vt_ival_insert to bring back. */
#define SKIP_DEAD 4

int vt_ival_insert_at(struct vt_ival_map *m, const struct vt_ival *iv, uint32_t at)
{
	/* the node may have been swept since (then it is free, or reused for
	 * another start) */
	if (at && m->nodes[at].state != NODE_FREE && m->nodes[at].iv.start == iv->start) {
		revive(m, at, iv);
		return 0;
	}
	return vt_ival_insert(m, iv);
}

/* The first live node at or before dead node n in start order, or 0.
 * Out of line: inlined, its call of tree_remove gave every lookup a stack
 * frame and saved registers, where most lookups meet no dead node here. */
static __attribute__((noinline)) uint32_t live_below(struct vt_ival_map *m, uint32_t n)
{
	for (unsigned skipped = 0; n && m->nodes[n].state == NODE_DEAD; skipped++) {
		uint32_t below = m->nodes[n].prev;
		if (skipped >= SKIP_DEAD) /* a crowd of them: no later lookup meets these again */
			tree_remove(m, n);
		n = below;
	}
	return n;
}

const struct vt_ival *vt_ival_find(struct vt_ival_map *m, uint64_t addr)
{
	uint32_t at;
	return vt_ival_find_at(m, addr, &at);
}

const struct vt_ival *vt_ival_find_at(struct vt_ival_map *m, uint64_t addr, uint32_t *at)
{
	/* the greatest live start <= addr: one that is addr itself is in the
	 * hash; below it, the node before it in start order. An allocation
	 * asks at its own address, where the node of the last free there
	 * usually lies dead: then no descent of the tree at all (it was a
	 * seventh of a streaming replay's time). */
	uint32_t best = *at = index_find(m, addr);
	if (best && m->nodes[best].state != NODE_LIVE)
		best = m->nodes[best].prev;
	else if (!best)
		best = addr ? floor_node(m, addr - 1) : 0;
	if (best && m->nodes[best].state == NODE_DEAD)
		best = live_below(m, best);
	if (!best)
		return NULL;
	const struct vt_ival *iv = &m->nodes[best].iv;
	return addr - iv->start < iv->len ? iv : NULL;
}

const struct vt_ival *vt_ival_exact(const struct vt_ival_map *m, uint64_t start)
{
	uint32_t n = index_find(m, start);
	return n && m->nodes[n].state == NODE_LIVE ? &m->nodes[n].iv : NULL;
}
