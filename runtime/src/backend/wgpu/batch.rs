//! Recording into the open batch and submitting it: dispatches, copies,
//! uploads, bind groups and the parameter arena.

use std::collections::hash_map::Entry;
use std::num::NonZeroU64;
use std::sync::atomic::Ordering;

use super::device::{
    backend_error, lock, Arity, Batch, BindKey, Bound, Gpu, Pipeline, Slab, EAGER, MAX_BIND_GROUPS,
    MAX_PENDING_TIMINGS, PARAM_WORDS, SLOT, SLOTS, STAGED, STAGED_UPLOAD,
};
use super::pipeline::{groups, Grid, Shader};
use crate::dtype::DType;
use crate::error::Result;

/// The kernel behind small uploads to buffers that queued kernels bind.
static UPLOAD: Shader = shader!("upload");

/// One kernel's work for [`Gpu::dispatch`]: `pipeline` over `grid`, with
/// `buffers` (the inputs, then the outputs) and `params` bound in order;
/// `kernel` is named in errors.
pub(crate) struct Dispatch<'a> {
    pub kernel: &'static str,
    pub pipeline: &'a Pipeline,
    pub buffers: &'a [Bound<'a>],
    pub params: &'a [u32],
    pub grid: Grid,
}

impl Gpu {
    /// Records `d` into the open batch. Nothing is
    /// created per call that can be made once: the parameters take a slot
    /// of the batch's arena, bind groups are cached by the buffers they
    /// bind, and one compute pass holds the batch's kernels. The batch is
    /// submitted when its arena is full, when it holds much work, or when
    /// a readback or an upload needs it.
    pub(crate) fn dispatch(&self, d: Dispatch<'_>) -> Result<()> {
        self.record(&mut lock(&self.batch), d)
    }

    /// [`Gpu::dispatch`] into the batch `b`, whose lock the caller holds.
    pub(super) fn record(&self, b: &mut Batch, d: Dispatch<'_>) -> Result<()> {
        let Dispatch { kernel, pipeline, buffers, params, grid } = d;
        let [x, y, z] = match grid {
            Grid::Elements(n) => groups(n.div_ceil(256)),
            Grid::Groups(g) => g,
        };
        if x.max(y).max(z) > self.max_groups {
            return Err(backend_error(
                kernel,
                format!("{grid:?} needs more than {} workgroups in one dimension", self.max_groups),
            ));
        }
        if params.len() > PARAM_WORDS {
            return Err(backend_error(
                kernel,
                format!(
                    "{} parameter words exceed the {PARAM_WORDS}-word block; the tensors have too many dims",
                    params.len()
                ),
            ));
        }
        let (inputs, outputs) = pipeline.arity;
        if buffers.len() != inputs + outputs {
            return Err(backend_error(
                kernel,
                format!("{} buffers bound to a program of {inputs} inputs and {outputs} outputs", buffers.len()),
            ));
        }
        let slot = b.slots;
        b.slots += 1;
        let (words, rest) = b.params[slot * SLOT as usize..][..SLOT as usize].split_at_mut(4 * params.len());
        words.copy_from_slice(bytemuck::cast_slice(params));
        rest.fill(0);
        for bound in buffers {
            bound.slab.used_in.store(b.serial, Ordering::Relaxed);
        }
        let key = BindKey {
            arity: pipeline.arity,
            ranges: buffers.iter().map(|r| (r.slab.id, r.offset, r.size.map_or(0, NonZeroU64::get))).collect(),
        };
        let full = b.bind_groups.len() >= MAX_BIND_GROUPS;
        let group = match b.bind_groups.entry(key) {
            Entry::Occupied(e) => e.into_mut(),
            Entry::Vacant(e) if !full => e.insert(self.bind_group(kernel, pipeline.arity, buffers)?),
            Entry::Vacant(e) => {
                let key = e.into_key();
                b.bind_groups.clear();
                b.bind_groups.entry(key).or_insert(self.bind_group(kernel, pipeline.arity, buffers)?)
            }
        };
        let device = &self.device;
        let encoder = b.encoder.get_or_insert_with(|| {
            device.create_command_encoder(&wgpu::CommandEncoderDescriptor { label: Some("opforge") })
        });
        let pass = b.pass.get_or_insert_with(|| {
            encoder
                .begin_compute_pass(&wgpu::ComputePassDescriptor { label: Some("opforge"), timestamp_writes: None })
                .forget_lifetime()
        });
        pass.set_pipeline(&pipeline.pipeline);
        pass.set_bind_group(0, &*group, &[(slot as u64 * SLOT) as u32]);
        let tag = crate::backend::timing_tag();
        match &self.timing {
            Some(t) if tag != 0 => {
                let first = 2 * b.stamps.len() as u32;
                pass.write_timestamp(&t.set, first);
                pass.dispatch_workgroups(x, y, z);
                pass.write_timestamp(&t.set, first + 1);
                b.stamps.push(tag);
            }
            _ => pass.dispatch_workgroups(x, y, z),
        }
        b.work += u64::from(x) * u64::from(y) * u64::from(z) * 256;
        self.counts.dispatches.fetch_add(1, Ordering::Relaxed);
        if b.slots == SLOTS || b.work >= EAGER {
            self.submit(b);
        }
        Ok(())
    }

    /// Records a copy of `bytes` bytes (whole words) from `src` at byte
    /// `from` to `dst` at byte `to` into the open batch, with the device's
    /// copy command, in queue order with the batch's kernels. That is the
    /// driver's memcpy, as `cudaMemcpyAsync` is PyTorch's: no shader, no
    /// binding limit. The open compute pass ends; the next kernel opens
    /// another.
    pub(crate) fn copy(&self, src: &Slab, from: u64, dst: &Slab, to: u64, bytes: u64) {
        if bytes == 0 {
            return;
        }
        let mut b = lock(&self.batch);
        for slab in [src, dst] {
            slab.used_in.store(b.serial, Ordering::Relaxed);
        }
        b.encoder(&self.device).copy_buffer_to_buffer(&src.buffer, from, &dst.buffer, to, bytes);
        b.work += bytes / 4;
        self.counts.copies.fetch_add(1, Ordering::Relaxed);
        if b.work >= EAGER {
            self.submit(&mut b);
        }
    }

    pub(super) fn bind_group(
        &self,
        kernel: &'static str,
        arity: Arity,
        buffers: &[Bound<'_>],
    ) -> Result<wgpu::BindGroup> {
        let layout = self.layout(arity);
        let entries: Vec<wgpu::BindGroupEntry<'_>> = buffers
            .iter()
            .map(|r| {
                wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                    buffer: &r.slab.buffer,
                    offset: r.offset,
                    size: r.size,
                })
            })
            .chain([wgpu::BindingResource::Buffer(wgpu::BufferBinding {
                buffer: &self.arena,
                offset: 0,
                size: NonZeroU64::new(SLOT),
            })])
            .enumerate()
            .map(|(i, resource)| wgpu::BindGroupEntry { binding: i as u32, resource })
            .collect();
        self.scoped(kernel, || {
            self.device.create_bind_group(&wgpu::BindGroupDescriptor {
                label: Some(kernel),
                layout: &layout.group,
                entries: &entries,
            })
        })
    }

    /// Drops the bind groups of a slab that is being freed.
    pub(crate) fn forget(&self, id: u64) {
        lock(&self.batch).bind_groups.retain(|k, _| k.ranges.iter().all(|r| r.0 != id));
    }

    /// Ends the batch: its parameters to the arena, its commands to the
    /// queue, in the order they were recorded.
    pub(super) fn submit(&self, b: &mut Batch) -> wgpu::SubmissionIndex {
        b.pass = None;
        let timed = match (&self.timing, b.stamps.is_empty()) {
            (Some(t), false) => {
                let queries = 2 * b.stamps.len() as u32;
                let bytes = u64::from(queries) * 8;
                let out = self.device.create_buffer(&wgpu::BufferDescriptor {
                    label: Some("opforge timestamps readback"),
                    size: bytes,
                    usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
                    mapped_at_creation: false,
                });
                let encoder = b.encoder(&self.device);
                encoder.resolve_query_set(&t.set, 0..queries, &t.resolve, 0);
                encoder.copy_buffer_to_buffer(&t.resolve, 0, &out, 0, bytes);
                Some((out, std::mem::take(&mut b.stamps)))
            }
            _ => None,
        };
        let commands = b.encoder.take().map(wgpu::CommandEncoder::finish);
        // These writes run before this submit's commands and after every
        // earlier submit's, which read the previous contents.
        if b.slots > 0 {
            self.queue.write_buffer(&self.arena, 0, &b.params[..b.slots * SLOT as usize]);
        }
        if !b.staged.is_empty() {
            self.queue.write_buffer(&self.staged.buffer, 0, &b.staged);
            b.staged.clear();
        }
        b.slots = 0;
        b.work = 0;
        b.serial += 1;
        self.counts.submits.fetch_add(1, Ordering::Relaxed);
        let index = self.queue.submit(commands);
        if let (Some(t), Some(timed)) = (&self.timing, timed) {
            let mut pending = lock(&t.pending);
            if pending.len() >= MAX_PENDING_TIMINGS {
                pending.remove(0);
            }
            pending.push(timed);
        }
        index
    }

    /// The serial of the open batch: a slab whose `used_in` differs is
    /// bound by no command that is queued but not yet submitted.
    pub(crate) fn open_batch(&self) -> u64 {
        lock(&self.batch).serial
    }

    /// Submits every queued command; returns the submission's index.
    ///
    /// Submits while holding the batch lock: commands must reach the GPU in
    /// the order they were queued, since a pooled buffer that one command
    /// reads may be the output of a later one.
    pub(crate) fn flush(&self) -> wgpu::SubmissionIndex {
        self.submit(&mut lock(&self.batch))
    }

    /// Writes `data` (whole words) to the start of `slab`, after every
    /// kernel queued so far that binds it. Up to [`STAGED_UPLOAD`] bytes, the
    /// write is itself a kernel: the data joins the batch's upload arena,
    /// written to the GPU once per submit, and `upload` copies it from
    /// there. No staging buffer per call, and no submit. A larger write
    /// goes through the queue's staging, which runs before the open
    /// batch's commands, so it submits the batch first if the batch binds
    /// `slab` ([`super::pool`] hands such uploads a slab it does not).
    pub(crate) fn write(&self, slab: &Slab, data: &[u8]) -> Result<()> {
        if data.len() <= STAGED_UPLOAD {
            let words = data.len() / 4;
            let pipeline = self.pipeline("upload", &UPLOAD, "upload", DType::F32, 0, (1, 1))?;
            let mut b = lock(&self.batch);
            if (b.staged.len() + data.len()) as u64 > STAGED {
                self.submit(&mut b);
            }
            let at = b.staged.len() / 4;
            b.staged.extend_from_slice(data);
            let aligned = b.staged.len().next_multiple_of(16);
            b.staged.resize(aligned, 0);
            let buffers = [Bound::whole(&self.staged), Bound::whole(slab)];
            let params = [words as u32, at as u32];
            let upload = Dispatch {
                kernel: "upload",
                pipeline: &pipeline,
                buffers: &buffers,
                params: &params,
                grid: Grid::Elements(words),
            };
            return self.record(&mut b, upload);
        }
        let mut b = lock(&self.batch);
        if slab.used_in.load(Ordering::Relaxed) == b.serial {
            // `write_buffer` runs before the commands of the next submit,
            // which must not see the new contents.
            self.submit(&mut b);
        }
        self.queue.write_buffer(&slab.buffer, 0, data);
        Ok(())
    }
}
