/* `vramtrace run -o`: the trace directory's name, with the placeholders a
 * launcher's ranks need to write one trace each from one command line
 * (`mpirun -n 8 vramtrace run -o job/%h-%q{OMPI_COMM_WORLD_RANK} -- ...`):
 *
 *   %h        this host's name
 *   %p        the pid of `vramtrace run`
 *   %q{NAME}  the value of environment variable NAME (an error if unset)
 *   %%        a literal %
 *
 * The same spellings as Nsight Systems' -o, which users of a cluster
 * already write. A value's '/' becomes '_': a variable never adds folders. */
#ifndef VT_RUN_OUT_NAME_H
#define VT_RUN_OUT_NAME_H

#include <stddef.h>

/* pattern with its placeholders filled into out: 0, or -1 with a message
 * (no "vramtrace run:" prefix) in err. */
int vt_run_out_name(const char *pattern, char *out, size_t len, char *err, size_t errlen);

/* The rank the launcher's environment gives this process (RANK,
 * OMPI_COMM_WORLD_RANK, SLURM_PROCID, ...: logwriter/rank_env.h), or -1. */
long vt_run_env_rank(void);

#endif
