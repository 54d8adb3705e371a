/* `vramtrace run`: one launcher per trace directory. Two launchers given the
 * same -o at the same moment would both find it empty and write one trace
 * of two jobs; an exclusive lock on the directory, held for the launcher's
 * life, lets exactly one of them go on. */
#ifndef VT_RUN_LOCK_H
#define VT_RUN_LOCK_H

/* Lock `dir` (an existing directory) for this process and its forks that do
 * not exec, then check that it holds no trace yet. 0, or -1 after one line
 * on stderr: the directory is in use by another `vramtrace run`, already
 * holds a trace, or cannot be locked. The lock goes with the process. */
int vt_run_lock_dir(const char *dir);

/* Does `dir` hold a trace (a log or run.json)? */
int vt_run_dir_holds_trace(const char *dir);

#endif
