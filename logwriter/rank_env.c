/* The rank environment of a launched process (rank_env.h). Each field is
 * taken from the first variable of its list that holds a plain number, the
 * launcher that sets the most specific one first: torchrun under srun sets
 * both RANK and SLURM_PROCID, and RANK is the one the job uses. */
#define _GNU_SOURCE /* memmem */
#include <stdlib.h>
#include <string.h>

#include "rank_env.h"

/* The fields a launcher's variables give, in rank_vars.name order. */
enum rank_field { F_RANK, F_LOCAL_RANK, F_WORLD_SIZE, F_LOCAL_WORLD_SIZE, F_COUNT };

/* A launcher's variables, NULL where it has none. */
struct rank_vars {
	uint32_t source;
	const char *name[F_COUNT];
};

static const struct rank_vars launchers[] = {
    {VT_RANK_TORCH, {"RANK", "LOCAL_RANK", "WORLD_SIZE", "LOCAL_WORLD_SIZE"}},
    {VT_RANK_OMPI,
     {"OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_LOCAL_RANK", "OMPI_COMM_WORLD_SIZE",
      "OMPI_COMM_WORLD_LOCAL_SIZE"}},
    {VT_RANK_HOROVOD, {"HOROVOD_RANK", "HOROVOD_LOCAL_RANK", "HOROVOD_SIZE", "HOROVOD_LOCAL_SIZE"}},
    {VT_RANK_PMI, {"PMI_RANK", NULL, "PMI_SIZE", NULL}},
    {VT_RANK_SLURM, {"SLURM_PROCID", "SLURM_LOCALID", "SLURM_NTASKS", NULL}},
};
#define NLAUNCHERS (sizeof launchers / sizeof launchers[0])

/* Longest TF_CONFIG read: a cluster spec lists every host, and a hostile
 * one must not make the shim scan without end. */
#define TF_CONFIG_MAX 65536

/* name's value as a number below 2^31, or -1 when unset or not a number. */
static long env_number(const char *name)
{
	const char *v = name ? getenv(name) : NULL;
	if (!v || !*v || strnlen(v, 12) > 10)
		return -1;
	char *end;
	long n = strtol(v, &end, 10);
	return *end || n < 0 || n > 0x7fffffff ? -1 : n;
}

/* The number after `"key"` and its colon in json[0..len), -1 if none. */
static long json_number_after(const char *json, size_t len, const char *key)
{
	const char *at = memmem(json, len, key, strlen(key));
	if (!at)
		return -1;
	const char *p = at + strlen(key), *end = json + len;
	while (p < end && (*p == ' ' || *p == ':' || *p == '\t' || *p == '\n'))
		p++;
	long n = 0;
	int digits = 0;
	for (; p < end && *p >= '0' && *p <= '9' && digits < 10; p++, digits++)
		n = n * 10 + (*p - '0');
	return digits ? n : -1;
}

/* The string after `"key"` and its colon, copied into out (NUL-terminated,
 * truncated); out stays empty if none. */
static void json_string_after(const char *json, size_t len, const char *key, char *out, size_t cap)
{
	const char *at = memmem(json, len, key, strlen(key));
	if (!at)
		return;
	const char *p = at + strlen(key), *end = json + len;
	while (p < end && *p != '"' && *p != ',' && *p != '}')
		p++;
	if (p >= end || *p != '"')
		return;
	size_t n = 0;
	for (p++; p < end && *p != '"' && n + 1 < cap; p++)
		out[n++] = *p;
	out[n] = '\0';
}

/* TF_CONFIG {"cluster": ..., "task": {"type": "worker", "index": 1}}: the
 * task's index is the rank, its type the role (a chief and worker 0 are
 * both index 0; the role tells them apart). */
static void describe_tf_config(struct vt_file_header *hdr)
{
	const char *tf = getenv("TF_CONFIG");
	if (!tf)
		return;
	size_t len = strnlen(tf, TF_CONFIG_MAX);
	const char *task = memmem(tf, len, "\"task\"", 6);
	if (!task)
		return;
	size_t rest = len - (size_t)(task - tf);
	long index = json_number_after(task, rest, "\"index\"");
	if (index < 0 || index > 0x7ffffffe)
		return;
	hdr->rank_p1 = (uint32_t)index + 1;
	hdr->rank_source = VT_RANK_TF_CONFIG;
	json_string_after(task, rest, "\"type\"", hdr->rank_role, sizeof hdr->rank_role);
}

/* The first launcher's value of one field, or -1. */
static long first_number(enum rank_field field)
{
	for (size_t i = 0; i < NLAUNCHERS; i++) {
		long n = env_number(launchers[i].name[field]);
		if (n >= 0)
			return n;
	}
	return -1;
}

void vt_rank_env_describe(struct vt_file_header *hdr)
{
	for (size_t i = 0; i < NLAUNCHERS && !hdr->rank_source; i++) {
		long rank = env_number(launchers[i].name[F_RANK]);
		if (rank >= 0 && rank < 0x7fffffff) {
			hdr->rank_p1 = (uint32_t)rank + 1;
			hdr->rank_source = launchers[i].source;
		}
	}
	if (!hdr->rank_source)
		describe_tf_config(hdr);
	long local = first_number(F_LOCAL_RANK);
	long world = first_number(F_WORLD_SIZE);
	long local_world = first_number(F_LOCAL_WORLD_SIZE);
	if (local >= 0 && local < 0x7fffffff)
		hdr->local_rank_p1 = (uint32_t)local + 1;
	hdr->world_size = world > 0 ? (uint32_t)world : 0;
	hdr->local_world_size = local_world > 0 ? (uint32_t)local_world : 0;
}

const char *vt_rank_source_variable(uint32_t source)
{
	if (source == VT_RANK_TF_CONFIG)
		return "TF_CONFIG";
	for (size_t i = 0; i < NLAUNCHERS; i++)
		if (launchers[i].source == source)
			return launchers[i].name[F_RANK];
	return "";
}
