/* The frame rules (analyzer/explain/frame_rules.def): every row matches the
 * name it was written for and gives its category, and the order between
 * rows is the documented one: the innermost CONTEXT rule wins, a MECHANISM
 * rule only without one, a file's rule before its function's. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "frame_evidence.h"

enum rule_kind { PY_FUNC, PY_FILE, NATIVE };
static const struct row {
	int kind, category, strength;
	const char *text;
} rows[] = {
#define CONTEXT VT_FRAME_CONTEXT
#define MECHANISM VT_FRAME_MECHANISM
#define FRAME_RULE(kind, text, category, strength) {kind, category, strength, text},
#include "frame_rules.def"
};

/* A frame whose name is the row's text (a path around it for files, a
 * namespace around it for native names) gives the row's verdict. */
static void every_row_matches_its_name(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof rows / sizeof rows[0]; i++) {
		const struct row *r = &rows[i];
		char file[256], native[256];
		snprintf(file, sizeof file, "/usr/lib/python3/site-packages/%s/x.py", r->text);
		snprintf(native, sizeof native, "ns::%s::Compute", r->text);
		const char *func = r->kind == PY_FUNC ? r->text : "helper";
		const char *path = r->kind == PY_FILE ? file : "/home/me/train.py";
		const char *nat = native;
		struct vt_frame_hint h = r->kind == NATIVE
		                             ? vt_frame_hint_of_names(NULL, NULL, 0, &nat, 1)
		                             : vt_frame_hint_of_names(&func, &path, 1, NULL, 0);
		assert_int_equal(h.category, r->category);
		assert_int_equal(h.strength, r->strength);
		assert_non_null(h.rule);
	}
}

static void no_rule_no_hint(void **state)
{
	(void)state;
	const char *funcs[] = {"train_step", "main"}, *files[] = {"/a/train.py", "/a/train.py"};
	const char *native[] = {"cuMemAlloc_v2", "main"};
	struct vt_frame_hint h = vt_frame_hint_of_names(funcs, files, 2, native, 2);
	assert_int_equal(h.category, VT_CAT_COUNT);
	assert_int_equal(h.strength, VT_FRAME_NONE);
}

/* optimizer.load_state_dict -> _process_value_according_to_param_policy:
 * the inner frame says optimizer state, the outer one's name says weights */
static void innermost_context_wins(void **state)
{
	(void)state;
	const char *funcs[] = {"_process_value_according_to_param_policy", "load_state_dict"};
	const char *files[] = {"/a/ckpt.py", "/a/ckpt.py"};
	struct vt_frame_hint h = vt_frame_hint_of_names(funcs, files, 2, NULL, 0);
	assert_int_equal(h.category, VT_CAT_OPTIMIZER);
}

/* Keras load_weights -> convert_to_eager_tensor: the conversion is how,
 * load_weights is why */
static void context_beats_mechanism(void **state)
{
	(void)state;
	const char *funcs[] = {"convert_to_eager_tensor", "load_weights", "main"};
	const char *files[] = {"/a/ops.py", "/a/saving.py", "/a/train.py"};
	struct vt_frame_hint h = vt_frame_hint_of_names(funcs, files, 3, NULL, 0);
	assert_int_equal(h.category, VT_CAT_WEIGHTS);
	assert_int_equal(h.strength, VT_FRAME_CONTEXT);
	h = vt_frame_hint_of_names(funcs, files, 1, NULL, 0); /* the conversion alone */
	assert_int_equal(h.category, VT_CAT_DATASET);
	assert_int_equal(h.strength, VT_FRAME_MECHANISM);
}

/* torch/optim/optimizer.py's load_state_dict is the optimizer's */
static void file_before_function(void **state)
{
	(void)state;
	const char *func = "load_state_dict", *file = "/x/site-packages/torch/optim/optimizer.py";
	struct vt_frame_hint h = vt_frame_hint_of_names(&func, &file, 1, NULL, 0);
	assert_int_equal(h.category, VT_CAT_OPTIMIZER);
}

/* A graph job moves its model and its graph with .to(device): PyG's
 * Data.to applies Tensor.to through its storage (data), the model's goes
 * through Module._apply (weights) */
static void graph_data_is_not_the_model(void **state)
{
	(void)state;
	const char *funcs[] = {"<lambda>", "recursive_apply", "apply", "to", "main"};
	const char *files[] = {"/x/site-packages/torch_geometric/data/data.py",
	                       "/x/site-packages/torch_geometric/data/storage.py",
	                       "/x/site-packages/torch_geometric/data/data.py",
	                       "/x/site-packages/torch_geometric/data/data.py", "/a/gnn.py"};
	struct vt_frame_hint h = vt_frame_hint_of_names(funcs, files, 5, NULL, 0);
	assert_int_equal(h.category, VT_CAT_DATASET);
	const char *mfuncs[] = {"convert", "_apply", "_apply", "to", "main"};
	const char *mfiles[] = {"/x/site-packages/torch/nn/modules/module.py",
	                        "/x/site-packages/torch/nn/modules/module.py",
	                        "/x/site-packages/torch/nn/modules/module.py",
	                        "/x/site-packages/torch/nn/modules/module.py", "/a/gnn.py"};
	h = vt_frame_hint_of_names(mfuncs, mfiles, 5, NULL, 0);
	assert_int_equal(h.category, VT_CAT_WEIGHTS);
}

/* What fit and predict upload is the data they were given, unless an
 * inner path says otherwise: Keras builds a model's layers inside its first
 * fit (add_weight), makes the optimizer's slots there (add_slot), and a
 * Lightning fit moves the model (_apply). */
static void fit_takes_data_unless_an_inner_path_says(void **state)
{
	(void)state;
	const char *data[] = {"convert_to_tensor", "__init__", "fit", "main"};
	const char *files[] = {"/a/ops.py", "/a/est.py", "/a/est.py", "/a/train.py"};
	struct vt_frame_hint h = vt_frame_hint_of_names(data, files, 4, NULL, 0);
	assert_int_equal(h.category, VT_CAT_DATASET);
	const char *build[] = {"add_weight", "build", "train_step", "fit", "main"};
	const char *bfiles[] = {"/a/l.py", "/a/l.py", "/a/m.py", "/a/m.py", "/a/train.py"};
	assert_int_equal(vt_frame_hint_of_names(build, bfiles, 5, NULL, 0).category,
	                 VT_CAT_WEIGHTS);
	const char *slots[] = {"add_slot", "apply_gradients", "train_step", "fit"};
	assert_int_equal(vt_frame_hint_of_names(slots, bfiles, 4, NULL, 0).category,
	                 VT_CAT_OPTIMIZER);
	const char *update[] = {"_resource_apply_dense", "apply_gradients", "train_step", "fit"};
	assert_int_equal(vt_frame_hint_of_names(update, bfiles, 4, NULL, 0).category,
	                 VT_CAT_OPTIMIZER);
	const char *moved[] = {"_apply", "to", "model_to_device", "fit"};
	assert_int_equal(vt_frame_hint_of_names(moved, bfiles, 4, NULL, 0).category,
	                 VT_CAT_WEIGHTS);
}

/* A training loop's frames say the job trains; a scoring loop's do not */
static void training_frames(void **state)
{
	(void)state;
	const char *fitting[] = {"_extend", "alloc", "forward", "fit", "main"};
	assert_true(vt_frame_names_train(fitting, 5));
	const char *scoring[] = {"_extend", "alloc", "forward", "predict", "main"};
	assert_false(vt_frame_names_train(scoring, 5));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(every_row_matches_its_name),
	    cmocka_unit_test(no_rule_no_hint),
	    cmocka_unit_test(innermost_context_wins),
	    cmocka_unit_test(context_beats_mechanism),
	    cmocka_unit_test(file_before_function),
	    cmocka_unit_test(graph_data_is_not_the_model),
	    cmocka_unit_test(fit_takes_data_unless_an_inner_path_says),
	    cmocka_unit_test(training_frames),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
