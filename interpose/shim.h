/* What the files of the shim that export the job-facing ABI share: the
 * visibility of those exports (every other symbol of the shim is hidden,
 * -fvisibility=hidden). */
#ifndef VT_SHIM_H
#define VT_SHIM_H

#define VT_EXPORT __attribute__((visibility("default")))

#endif
