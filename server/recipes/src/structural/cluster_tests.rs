//! ClusterUnits: a thread-block cluster per unit for fewer units than SMs (issue 34's few huge
//! rows). Which kernels get it (as data), every candidate compiled with the real nvcc for sm_90,
//! a snapshot of a generated kernel, the cluster size on every parameter point, and the bench's
//! layer-norm form kept equal to the generator's output for the GPU test.

use super::tests::{applied, compile_structural, fixture, generated, recipe};
use expect_test::expect;

/// (fixture, kernel, the structural rewrites that apply with their candidate counts).
const FEW_ROWS: &[(&str, &str, &str)] = &[
    // KernelBench's layer norm: 16 rows of 4M floats, double sums (also as float), three walks.
    ("kbench/40_LayerNorm.cu", "layer_norm_rows", "WarpUnits x8, BlockUnits x6, ClusterUnits x12"),
    // Softmax's max walk and exp-sum walk merged into one online pass: 128 rows of 393k.
    ("kbench/23_Softmax.cu", "softmax_rows", "WarpUnits x8, BlockUnits x6, ClusterUnits x12"),
    ("cluster/rowsum_few_long.cu", "row_sums", "WarpUnits x4, BlockUnits x3, ClusterUnits x6"),
    // The online max and rescaled sum as written, a pair combined across lanes, warps and blocks.
    ("cluster/softmax_online_few_rows.cu", "softmax_online_rows", "WarpUnits x4, BlockUnits x3, ClusterUnits x6"),
    // Many rows fill the GPU with blocks (or warps) already: no cluster.
    ("layernorm_rowptr.cu", "layernorm", "WarpUnits x8"),
    ("softmax_online_thread_row.cu", "softmax_online", "WarpUnits x4"),
    ("instnorm_thread_plane.cu", "instance_norm", "WarpUnits x4, BlockUnits x3"),
];

#[test]
fn few_long_rows_get_a_cluster_per_row() {
    let got: Vec<(&str, &str, String)> = FEW_ROWS.iter().map(|(f, k, _)| (*f, *k, applied(f, k))).collect();
    let want: Vec<(&str, &str, String)> = FEW_ROWS.iter().map(|(f, k, w)| (*f, *k, w.to_string())).collect();
    assert_eq!(got, want);
}

#[test]
fn every_cluster_candidate_compiles_for_sm_90() {
    let (compiled, failed) = compile_structural(FEW_ROWS.iter().map(|(f, k, _)| (*f, *k)));
    assert!(failed.is_empty(), "{}", failed.join("\n\n"));
    assert!(compiled >= 12, "only {compiled} candidates compiled");
}

/// Each candidate is a point of ClusterUnits' form with its cluster size, under a launch whose
/// grid is a multiple of it (the user's grid of one block is no candidate: the driver refuses it),
/// with `<cooperative_groups.h>` included once.
#[test]
fn points_carry_the_cluster_size() {
    for (file, kernel) in [("kbench/40_LayerNorm.cu", "layer_norm_rows"), ("cluster/rowsum_few_long.cu", "row_sums")] {
        let text = fixture(file);
        let rws = recipe("ClusterUnits").rewrite(&text, kernel);
        let tags = crate::points::tag(&text, kernel, "ClusterUnits", &rws, 0);
        let mut sizes = Vec::new();
        for (rw, tag) in rws.iter().zip(&tags) {
            let tag = tag.as_ref().unwrap_or_else(|| panic!("{file}: no point for {}", rw.note));
            let c = tag.point.get("cluster").unwrap_or_else(|| panic!("{file}: no cluster size: {}", rw.note));
            assert!(rw.note.starts_with(&format!("one cluster of {c} blocks per unit")), "{c}: {}", rw.note);
            let grid = tag.point.get("grid").unwrap();
            assert_eq!(grid % c, 0, "{file}: a grid of {grid} blocks under clusters of {c}: {}", rw.note);
            assert_eq!(rw.source.matches("#include <cooperative_groups.h>").count(), 1, "{}", rw.source);
            sizes.push(c);
        }
        sizes.sort();
        sizes.dedup();
        assert_eq!(sizes, [2, 4, 8], "{file}");
    }
}

/// Many rows get no cluster point from any recipe.
#[test]
fn many_rows_get_no_cluster_point() {
    for (file, kernel) in [("layernorm_rowptr.cu", "layernorm"), ("softmax_online_thread_row.cu", "softmax_online")] {
        let text = fixture(file);
        for name in ["WarpUnits", "BlockUnits", "ClusterUnits"] {
            let rws = recipe(name).rewrite(&text, kernel);
            let tags = crate::points::tag(&text, kernel, name, &rws, 0);
            assert!(tags.iter().flatten().all(|t| t.point.get("cluster").is_none()), "{file}: {name}");
        }
    }
}

/// A kernel that shares memory or barriers of its own, or already names a cluster, is not given one.
#[test]
fn shared_memory_or_a_cluster_of_the_users_is_refused() {
    let text = fixture("cluster/rowsum_few_long.cu");
    for (from, to) in [
        ("float s = 0.f;", "__shared__ float t[1]; float s = 0.f;"),
        ("__global__ void row_sums", "__global__ void __cluster_dims__(2, 1, 1) row_sums"),
    ] {
        let changed = text.replace(from, to);
        assert!(recipe("ClusterUnits").rewrite(&changed, "row_sums").is_empty(), "{to}");
    }
}

#[test]
fn snapshot_of_the_online_pair_across_a_cluster() {
    expect![[r#"
        ## one cluster of 2 blocks per unit (r): 2 loop(s) split across the cluster's threads, shuffle, shared-memory and distributed shared-memory all-reductions (sm_90; a launch whose grid is not a multiple of 2 blocks in x fails); launch block = 512, grid = min(R * 2, 132 * 4)
        ## one cluster of 2 blocks per unit (r): 2 loop(s) split across the cluster's threads, shuffle, shared-memory and distributed shared-memory all-reductions (sm_90; a launch whose grid is not a multiple of 2 blocks in x fails); launch block = 1024, grid = min(R * 2, 132 * 2)
        ## one cluster of 4 blocks per unit (r): 2 loop(s) split across the cluster's threads, shuffle, shared-memory and distributed shared-memory all-reductions (sm_90; a launch whose grid is not a multiple of 4 blocks in x fails); launch block = 512, grid = min(R * 4, 132 * 4)
        ## one cluster of 4 blocks per unit (r): 2 loop(s) split across the cluster's threads, shuffle, shared-memory and distributed shared-memory all-reductions (sm_90; a launch whose grid is not a multiple of 4 blocks in x fails); launch block = 1024, grid = min(R * 4, 132 * 2)
        ## one cluster of 8 blocks per unit (r): 2 loop(s) split across the cluster's threads, shuffle, shared-memory and distributed shared-memory all-reductions (sm_90; a launch whose grid is not a multiple of 8 blocks in x fails); launch block = 512, grid = min(R * 8, 132 * 4)
        ## one cluster of 8 blocks per unit (r): 2 loop(s) split across the cluster's threads, shuffle, shared-memory and distributed shared-memory all-reductions (sm_90; a launch whose grid is not a multiple of 8 blocks in x fails); launch block = 1024, grid = min(R * 8, 132 * 2)
        __global__ void __attribute__((cluster_dims(2, 1, 1))) __launch_bounds__(512) softmax_online_rows(const float* x, float* y, int rows, int dim) {
          // One thread-block cluster per unit; its blocks' threads split the unit's loops, warps combined through shared memory and blocks through distributed shared memory (kernelpro ClusterUnits).
          const cooperative_groups::cluster_group kp_cluster = cooperative_groups::this_cluster();
          const int kp_tid = (int)(threadIdx.x + blockDim.x * (threadIdx.y + blockDim.y * threadIdx.z));
          const int kp_nw = (int)(blockDim.x * blockDim.y * blockDim.z) >> 5;
          const unsigned kp_cn = kp_cluster.num_blocks();
          const int kp_lane = (int)kp_cluster.block_rank() * (int)(blockDim.x * blockDim.y * blockDim.z) + kp_tid;
          const int kp_team = (int)kp_cn * (int)(blockDim.x * blockDim.y * blockDim.z);
          // Blocks of a cluster are consecutive in x and the grid's x is a multiple of the cluster's.
          for (long long kp_u = ((long long)blockIdx.x + (long long)gridDim.x * (blockIdx.y + (long long)gridDim.y * blockIdx.z)) / kp_cn; kp_u < (long long)(rows); kp_u += ((long long)gridDim.x * gridDim.y * gridDim.z) / kp_cn) {
            const int r = (int)(kp_u);
            float m = -INFINITY, s = 0.f;
            #pragma unroll 4
            for (int i = 0 + kp_lane; i < dim; i += kp_team) {
              float v = x[(size_t)r * dim + i];
              float mn = fmaxf(m, v);
              s = s * expf(m - mn) + expf(v - mn);
              m = mn;
            }
            for (int kp_o = 16; kp_o > 0; kp_o >>= 1) { const auto kp_m = __shfl_xor_sync(0xffffffffu, m, kp_o); const auto kp_s = __shfl_xor_sync(0xffffffffu, s, kp_o); { const auto kp_n = fmaxf(m, kp_m); s = (m == -INFINITY ? 0 : s * expf(m - kp_n)) + (kp_m == -INFINITY ? 0 : kp_s * expf(kp_m - kp_n)); m = kp_n; } }
            { __shared__ decltype(s) kp_x[32]; __shared__ decltype(m) kp_y[32]; if ((kp_tid & 31) == 0) { kp_x[kp_tid >> 5] = s; kp_y[kp_tid >> 5] = m; } __syncthreads(); s = kp_x[0]; m = kp_y[0]; for (int kp_w = 1; kp_w < kp_nw; ++kp_w) { { const auto kp_n = fmaxf(m, kp_y[kp_w]); s = (m == -INFINITY ? 0 : s * expf(m - kp_n)) + (kp_y[kp_w] == -INFINITY ? 0 : kp_x[kp_w] * expf(kp_y[kp_w] - kp_n)); m = kp_n; } } __syncthreads(); }
            { __shared__ decltype(s) kp_c0; __shared__ decltype(m) kp_c1; if (kp_tid == 0) { kp_c0 = s; kp_c1 = m; } kp_cluster.sync(); s = *kp_cluster.map_shared_rank(&kp_c0, 0u); m = *kp_cluster.map_shared_rank(&kp_c1, 0u); for (unsigned kp_r = 1; kp_r < kp_cn; ++kp_r) { const auto kp_p0 = *kp_cluster.map_shared_rank(&kp_c0, kp_r); const auto kp_p1 = *kp_cluster.map_shared_rank(&kp_c1, kp_r); { const auto kp_n = fmaxf(m, kp_p1); s = (m == -INFINITY ? 0 : s * expf(m - kp_n)) + (kp_p1 == -INFINITY ? 0 : kp_p0 * expf(kp_p1 - kp_n)); m = kp_n; } } kp_cluster.sync(); }
            #pragma unroll 4
            for (int i = 0 + kp_lane; i < dim; i += kp_team) y[(size_t)r * dim + i] = expf(x[(size_t)r * dim + i] - m) / s;
            kp_cluster.sync();
          }
        }
    "#]].assert_eq(&generated("cluster/softmax_online_few_rows.cu", "softmax_online_rows", "ClusterUnits"));
}

/// The bench's layer-norm form (`bench/kernels/cluster/`, run against KernelBench's kernel by the
/// GPU test `cluster_layer_norm_equals_the_original`): clusters of 8 blocks of 1024 threads, double
/// sums as written, as the generator writes it (UPDATE_EXPECT=1 rewrites it).
#[test]
fn bench_kernel_is_the_generators_output() {
    let rws = recipe("ClusterUnits").rewrite(&fixture("kbench/40_LayerNorm.cu"), "layer_norm_rows");
    let rw = rws
        .iter()
        .find(|rw| {
            rw.note.starts_with("one cluster of 8 blocks")
                && !rw.note.contains("as float")
                && rw.note.contains("launch block = 1024")
        })
        .expect("the cluster-of-8 form under 1024 threads");
    let want = format!("// ClusterUnits' form: {}\n{}", rw.note, rw.source);
    let path =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../bench/kernels/cluster/layernorm_cluster8.cu");
    if std::fs::read_to_string(&path).ok().as_deref() != Some(want.as_str()) {
        if std::env::var_os("UPDATE_EXPECT").is_some() {
            std::fs::create_dir_all(path.parent().unwrap()).unwrap();
            std::fs::write(&path, &want).unwrap();
        } else {
            panic!("{} differs from the generator's output: UPDATE_EXPECT=1 rewrites it", path.display());
        }
    }
}
