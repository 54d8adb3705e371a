/* How every command loads its trace (commands.h): a progress bar on stderr
 * while the logs are read, when stderr is a terminal and the read takes
 * longer than half a second (a 100 M-event trace takes the full model half a
 * minute, which should not look like a hang). */
#include <stddef.h>

#include "commands.h"
#include "model.h"
#include "model_stream.h"
#include "term.h"

struct vt_model *vt_cmd_load(const char *dir, int streaming, char *err, size_t errlen)
{
	struct vt_progress bar;
	vt_progress_begin(&bar, "reading trace");
	vt_model_set_load_progress(vt_progress_hook, &bar);
	struct vt_model *m = streaming ? vt_model_load_trace_streaming(dir, err, errlen)
	                               : vt_model_load_trace(dir, err, errlen);
	vt_model_set_load_progress(NULL, NULL);
	vt_progress_end(&bar);
	return m;
}
