/* The launcher's rank environment, read once when a process's log is made
 * (torchrun, mpirun, srun, horovodrun, TF_CONFIG): which rank of the job
 * the process is, so the analyzer can report a job's ranks side by side. */
#ifndef VT_RANK_ENV_H
#define VT_RANK_ENV_H

#include "vramtrace/format.h"

/* Fill hdr's rank_p1, local_rank_p1, world_size, local_world_size,
 * rank_source and rank_role from the environment (getenv only: the
 * environment is never changed); fields no variable gives stay zero. */
void vt_rank_env_describe(struct vt_file_header *hdr);

/* What rank_source names: "RANK", "OMPI_COMM_WORLD_RANK", ... ("" for
 * VT_RANK_NONE or an unknown value). */
const char *vt_rank_source_variable(uint32_t source);

#endif
