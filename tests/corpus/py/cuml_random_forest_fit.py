#!/usr/bin/env python3
"""cuDF + cuML random forest on a HIGGS-shaped table: `gdf =
cudf.DataFrame.from_pandas(pdf)` (1,000,000 rows, 28 float32 features and
a float32 label), `y = gdf["label"].astype("int32")`, `X =
gdf.drop(columns="label")`, `RandomForestClassifier(n_estimators=40,
max_depth=12, n_bins=128, n_streams=4).fit(X, y)`, then `predict` on a
held-out numpy array of 500,000 rows. RMM's default resource
(`cuda_memory_resource`: one cudaMalloc / cudaFree per buffer).

What is modelled (sources: cudf `DataFrame.from_pandas` -> per column
`as_column(series)` -> `as_buffer(numpy)`: one device buffer per column
filled by one copy, the RangeIndex kept on the host; `Series.astype`: a
new int32 column made on the device; `DataFrame.drop`: no copy;
cuml/internals/input_utils.py `input_to_cuml_array` (the DataFrame as one
column-major matrix: an empty F-order array and one device-to-device
copy per column; a cuDF int32 label column taken without a copy; a numpy
array uploaded whole in the order asked, C for prediction);
cuml/ensemble/randomforestclassifier.pyx (`cp.unique(y)` for
`classes_`: a sorted copy, a mask, the unique values); cpp/src/
randomforest/randomforest.cuh `RandomForest::fit` (one
`selected_rows` buffer per stream made before the tree loop and reused,
`computeQuantiles` once: the quantiles and, per column, a sorted copy in
a temporary with cub's temp storage), decisiontree `grow_tree` and
batched-levelalgo/builder_base.cuh (per tree: the sampled column ids and
ONE device workspace -- node count, class histograms, done counts,
mutexes, leaf and depth counters, best splits, current and next node
batches -- whose size `workspaceSize` computes; `doSplit` per batch of
at most `max_batch_size` nodes: memsets, the current nodes copied up
from the host vector `h_nodes`, the new nodes copied back; the learned
tree lives on the host); predict: treelite from the host trees,
`fil::from_treelite` uploads the sparse forest (nodes and tree offsets),
one prediction buffer, read back to numpy, all freed after). No
markers, driver by cuGetProcAddress (libcudart).

Truth: the 29 uploaded training columns dataset, one
whole_dataset_upload finding per column (4,000,000 B each: cuDF keeps
one device buffer per column, each uploaded whole by its own copy, so
each column is an array of the truth format; score.py adds at most six
arrays into one reported finding, so one finding for the whole table
would not match), and the held-out prediction matrix (56,000,000 B) dataset with its
own finding; the int32 labels, the column-major training matrix and the
quantiles (made on the device from the uploaded table) dataset without a
finding; `unique`'s temporaries, quantile sort temporaries, each tree's
workspace and the predictions activations; bootstrap row buffers,
sampled column ids and `classes_` other; the FIL forest (uploaded)
weights. No prefetch; 0 steps (trees are fitted one by one, no optimizer
step). Coincidences: a column, the int32 labels, the sorted label copy,
a bootstrap row buffer and a sorted column are each 4,000,000 B; the
predictions (500,000 float32) are half a column."""
import random

import vtc

job = vtc.Job("cuml_random_forest_fit", "getproc", __doc__)
ROWS, FEATURES, TEST_ROWS = 1000000, 28, 500000
COL = ROWS * 4
TREES, STREAMS, MAX_DEPTH, N_BINS, MAX_BATCH, CLASSES = 40, 4, 12, 128, 128, 2
NODE, SPLIT = 40, 16        # sizeof(Node<float, int, int>), sizeof(Split<float, int>)
ALIGN = 512


def alloc(n, cat):
    return job.mem_alloc(0, n, cat)


def free(*ptrs):
    job.mem_free(0, *ptrs)


def aligned(n):
    return -(-n // ALIGN) * ALIGN


def workspace_size():
    """Builder::workspaceSize for classification (batched-levelalgo)."""
    col_blks = min(FEATURES, 10)
    hist_bins = 2 * MAX_BATCH * N_BINS * col_blks * CLASSES
    return (aligned(4) + aligned(4 * hist_bins) + aligned(4 * MAX_BATCH * col_blks)
            + aligned(4 * MAX_BATCH) + aligned(0) + aligned(4) + aligned(4)
            + aligned(SPLIT * MAX_BATCH) + aligned(NODE * MAX_BATCH)
            + aligned(NODE * 2 * MAX_BATCH))


def from_pandas():
    """cudf.DataFrame.from_pandas: one buffer and one copy per column."""
    return [job.upload(0, COL, "dataset") for _ in range(FEATURES + 1)]


def input_to_cuml_array_frame(cols):
    """The DataFrame as an F-order matrix: a device copy per column."""
    m = alloc(FEATURES * COL, "dataset")
    for i, c in enumerate(cols):
        job.dtod(0, m + i * COL, c, COL)
    return m


def unique(y):
    s = alloc(COL, "activations")                       # sorted copy
    job.dtod(0, s, y, COL)
    mask = alloc(ROWS, "activations")
    classes = alloc(CLASSES * 4, "other")
    free(mask, s)
    job.dtoh(0, classes, CLASSES * 4)
    return classes


def compute_quantiles(matrix):
    quantiles = alloc(N_BINS * FEATURES * 4, "dataset")
    temp = alloc(2 * COL + 4096, "activations")         # cub radix sort temp storage
    single = alloc(COL, "activations")                  # single_column_sorted
    for i in range(FEATURES):
        job.dtod(0, single, matrix + i * COL, COL)
    free(single, temp)
    return quantiles


def grow_trees(rng, group):
    """Up to STREAMS trees at once, each with its own workspace; per tree
    a doSplit per batch of at most MAX_BATCH pending nodes until none is
    left (each split node makes two children while its budget lasts).
    Returns the trees' node counts."""
    ws_size = workspace_size()
    curr = ws_size - aligned(NODE * 2 * MAX_BATCH) - aligned(NODE * MAX_BATCH)
    trees = []
    for _ in range(group):
        colids = alloc(FEATURES * 4, "other")
        ws = alloc(ws_size, "activations")
        trees.append({"colids": colids, "ws": ws, "pending": 1, "nodes": 1,
                      "budget": rng.randint(2500, 4000)})
    while any(t["pending"] for t in trees):
        for t in trees:
            if not t["pending"]:
                continue
            ws, batch = t["ws"], min(t["pending"], MAX_BATCH)
            job.zero(0, ws, 4)                                      # n_nodes
            job.zero(0, ws + aligned(4), 4 * 2 * MAX_BATCH * N_BINS * 10 * CLASSES)  # hist
            job.htod(0, ws + curr, batch * NODE)                    # curr_nodes from h_nodes
            job.dtoh(0, ws, 4)                                      # h_n_nodes
            new = min(2 * batch, t["budget"])
            t["budget"] -= new
            job.dtoh(0, ws + curr, batch * NODE)
            if new:
                job.dtoh(0, ws + curr + aligned(NODE * MAX_BATCH), new * NODE)   # next_nodes
            t["pending"] += new - batch
            t["nodes"] += new
    for t in trees:
        free(t["ws"], t["colids"])
    return [t["nodes"] for t in trees]


def fit(rng, cols):
    y = alloc(COL, "dataset")                           # gdf["label"].astype("int32")
    job.dtod(0, y, cols[-1], COL)
    x = input_to_cuml_array_frame(cols[:-1])
    classes = unique(y)
    selected_rows = [alloc(COL, "other") for _ in range(STREAMS)]
    quantiles = compute_quantiles(x)
    node_counts = []
    for first in range(0, TREES, STREAMS):
        node_counts += grow_trees(rng, min(STREAMS, TREES - first))
    free(quantiles, *selected_rows, x)                  # X_m dropped when fit returns
    return y, classes, node_counts


def predict(node_counts):
    xt = job.upload(0, TEST_ROWS * FEATURES * 4, "dataset")   # input_to_cuml_array(order="C")
    nodes = job.upload(0, sum(node_counts) * 16, "weights")  # fil::from_treelite: sparse nodes
    trees = job.upload(0, TREES * 4, "weights")              # tree offsets
    preds = alloc(TEST_ROWS * 4, "activations")
    job.dtoh(0, preds, TEST_ROWS * 4)
    free(preds, trees, nodes, xt)


def main():
    job.start(markers_default=False)
    job.open_devices(1)
    rng = random.Random(28)
    cols = from_pandas()
    y, classes, node_counts = fit(rng, cols)
    predict(node_counts)
    free(classes, y, *cols)
    for _ in range(FEATURES + 1):
        job.line("finding whole_dataset_upload 0 %d" % COL)
    job.line("finding whole_dataset_upload 0 %d" % (TEST_ROWS * FEATURES * 4))
    job.line("no_finding prefetch_depth")
    job.line("steps 0 0")
    job.finish()


main()
