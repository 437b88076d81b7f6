//! Prints what the wgpu adapter opforge would open offers for its dtypes:
//! the shader features f16, f64 and i64 kernels need, the cooperative
//! matrices a tensor-core matmul needs, subgroups, timestamps and the
//! limits the pool and the tiled shaders size themselves by.
//!
//! ```sh
//! WGPU_BACKEND=vulkan cargo run --release -p opforge-examples --example gpu_adapter
//! ```
//!
//! Every adapter is listed, the one opforge picks (a real GPU before a
//! virtual one, a CPU rasterizer last) first among equals in its rank.

use wgpu::Features;

fn main() {
    let desc = wgpu::InstanceDescriptor::new_without_display_handle_from_env();
    let backends = desc.backends;
    let instance = wgpu::Instance::new(desc);
    let adapters = ready(instance.enumerate_adapters(backends));
    if adapters.is_empty() {
        println!("no adapter for backends {backends:?} (set WGPU_BACKEND, install a Vulkan driver)");
        return;
    }
    let named = [
        ("SHADER_F16", Features::SHADER_F16),
        ("SHADER_F64", Features::SHADER_F64),
        ("SHADER_INT64", Features::SHADER_INT64),
        ("SHADER_I16", Features::SHADER_I16),
        ("SUBGROUP", Features::SUBGROUP),
        ("EXPERIMENTAL_COOPERATIVE_MATRIX", Features::EXPERIMENTAL_COOPERATIVE_MATRIX),
        ("TIMESTAMP_QUERY", Features::TIMESTAMP_QUERY),
        ("TIMESTAMP_QUERY_INSIDE_PASSES", Features::TIMESTAMP_QUERY_INSIDE_PASSES),
        ("SHADER_FLOAT32_ATOMIC", Features::SHADER_FLOAT32_ATOMIC),
    ];
    for adapter in adapters {
        let info = adapter.get_info();
        println!(
            "adapter: {} ({:?}, {:?}, {} {})",
            info.name, info.backend, info.device_type, info.driver, info.driver_info
        );
        let features = adapter.features();
        for (name, feature) in named {
            println!("  {name:<32} {}", if features.contains(feature) { "yes" } else { "no" });
        }
        let matrices = adapter.cooperative_matrix_properties();
        println!("  cooperative matrices: {}", matrices.len());
        for m in matrices {
            println!(
                "    {}x{}x{} {:?} -> {:?}{}",
                m.m_size,
                m.n_size,
                m.k_size,
                m.ab_type,
                m.cr_type,
                if m.saturating_accumulation { " (saturating)" } else { "" }
            );
        }
        let limits = adapter.limits();
        println!(
            "  limits: buffer {} B, storage binding {} B, workgroup storage {} B, invocations {}, subgroup {}..{}",
            limits.max_buffer_size,
            limits.max_storage_buffer_binding_size,
            limits.max_compute_workgroup_storage_size,
            limits.max_compute_invocations_per_workgroup,
            info.subgroup_min_size,
            info.subgroup_max_size,
        );
    }
}

/// wgpu's native futures are ready when first polled.
fn ready<F: std::future::Future>(f: F) -> F::Output {
    let mut cx = std::task::Context::from_waker(std::task::Waker::noop());
    let mut f = std::pin::pin!(f);
    loop {
        if let std::task::Poll::Ready(v) = f.as_mut().poll(&mut cx) {
            return v;
        }
        std::thread::yield_now();
    }
}
