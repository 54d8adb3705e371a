/* How every command loads its trace: with a progress bar on a terminal and
 * a warning before a full model that may not fit (cmd_load.c). */
#ifndef VT_CMD_LOAD_H
#define VT_CMD_LOAD_H

struct vt_model;

/* The trace in dir as a finished model (streaming: the streaming model),
 * or NULL after one line on stderr that names cmd. */
struct vt_model *vt_cmd_load(const char *cmd, const char *dir, int streaming);
/* The same with a folding model (model_fold.h). */
struct vt_model *vt_cmd_load_folding(const char *cmd, const char *dir);
/* The full model of a trace this command has read once already (a folding
 * model that could not answer): the reader's warnings about the trace were
 * said by the first read and are not said again; a failure still is. */
struct vt_model *vt_cmd_reload_full(const char *cmd, const char *dir);

/* Every trace of t as a full model into models[0..t->n): 0, or 1 after
 * one line on stderr (none left loaded). */
struct vt_cli_traces;
int vt_cmd_load_all(const char *cmd, const struct vt_cli_traces *t, struct vt_model **models);
void vt_cmd_free_all(struct vt_model **models, unsigned n);

/* A job folder: a folder that holds no trace itself but trace directories
 * (one per host or rank, as `run -o job/%h` makes them). Adds to t the
 * trace directories inside `arg`, sorted by name, when it is a job folder,
 * else arg itself. The names added are the caller's to free with
 * vt_cmd_free_names (names[0..*nnames), at most VT_CLI_MAX_TRACES).
 * 0, or a usage error's exit code after one line on stderr. */
int vt_cmd_add_traces(const char *cmd, struct vt_cli_traces *t, const char *arg, char **names,
                      unsigned *nnames);
void vt_cmd_free_names(char **names, unsigned n);

#endif
