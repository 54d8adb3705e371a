/* Treap over a node array (see model_intervals.h). Index 0 is the null node
 * so children are plain uint32_t and the array can be realloc'd freely. */
#include "model_intervals.h"

#include <stdlib.h>
#include <string.h>

struct vt_ival_node {
	struct vt_ival iv;
	uint32_t left, right;
	uint32_t prio;
};

void vt_ival_init(struct vt_ival_map *m)
{
	memset(m, 0, sizeof *m);
	m->rng = 0x9e3779b97f4a7c15ull;
}

void vt_ival_destroy(struct vt_ival_map *m)
{
	free(m->nodes);
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
	m->nodes[n].prio = next_prio(m);
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

int vt_ival_insert(struct vt_ival_map *m, const struct vt_ival *iv)
{
	vt_ival_erase(m, iv->start, NULL);
	return vt_ival_insert_new(m, iv);
}

int vt_ival_insert_new(struct vt_ival_map *m, const struct vt_ival *iv)
{
	uint32_t n = new_node(m, iv);
	if (!n)
		return -1;
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
	m->count++;
	return 0;
}

int vt_ival_erase(struct vt_ival_map *m, uint64_t start, struct vt_ival *out)
{
	uint32_t *link = &m->root;
	while (*link && m->nodes[*link].iv.start != start)
		link = start < m->nodes[*link].iv.start ? &m->nodes[*link].left
		                                        : &m->nodes[*link].right;
	uint32_t n = *link;
	if (!n)
		return 0;
	if (out)
		*out = m->nodes[n].iv;
	*link = merge(m->nodes, m->nodes[n].left, m->nodes[n].right);
	m->nodes[n].left = m->free_head;
	m->free_head = n;
	m->count--;
	return 1;
}

const struct vt_ival *vt_ival_find(const struct vt_ival_map *m, uint64_t addr)
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
	if (!best)
		return NULL;
	const struct vt_ival *iv = &m->nodes[best].iv;
	return addr - iv->start < iv->len ? iv : NULL;
}

const struct vt_ival *vt_ival_exact(const struct vt_ival_map *m, uint64_t start)
{
	uint32_t t = m->root;
	while (t && m->nodes[t].iv.start != start)
		t = start < m->nodes[t].iv.start ? m->nodes[t].left : m->nodes[t].right;
	return t ? &m->nodes[t].iv : NULL;
}
