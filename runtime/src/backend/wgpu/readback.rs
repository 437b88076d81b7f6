//! Waiting for the device and reading buffers and timestamps back.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use super::device::{backend_error, lock, Gpu, TIMEOUT};
use crate::error::Result;

/// Where a `map_async` callback leaves its outcome for the waiting thread.
type MapResult = Arc<Mutex<Option<std::result::Result<(), String>>>>;

impl Gpu {
    /// Submits everything queued and waits until it has run.
    pub(crate) fn wait(&self) -> Result<()> {
        self.counts.waits.fetch_add(1, Ordering::Relaxed);
        let index = self.flush();
        self.device
            .poll(wgpu::PollType::Wait { submission_index: Some(index), timeout: Some(TIMEOUT) })
            .map_err(|e| backend_error("", format!("waiting for the device: {e}")))?;
        self.check_uncaptured()
    }

    /// The device time of each kernel tagged with one of `tags`, the sum
    /// over its dispatches, after waiting for them. Timings of other tags
    /// (another thread's profile) stay for their owner.
    pub(crate) fn device_times(&self, tags: &std::collections::HashSet<u64>) -> Result<HashMap<u64, Duration>> {
        let mut times = HashMap::new();
        let Some(t) = &self.timing else { return Ok(times) };
        self.wait()?;
        let mine: Vec<(wgpu::Buffer, Vec<u64>)> = {
            let mut pending = lock(&t.pending);
            let (mine, others) =
                std::mem::take(&mut *pending).into_iter().partition(|(_, s)| s.iter().any(|tag| tags.contains(tag)));
            *pending = others;
            mine
        };
        for (buffer, stamps) in mine {
            let done = start_map(&buffer);
            let data = self.wait_mapped(buffer, None, done)?;
            let ticks: Vec<u64> =
                data.chunks_exact(8).map(|c| u64::from_le_bytes(c.try_into().unwrap_or([0; 8]))).collect();
            for (i, tag) in stamps.iter().enumerate() {
                let ns = ticks[2 * i + 1].saturating_sub(ticks[2 * i]) as f64 * t.period;
                *times.entry(*tag).or_insert(Duration::ZERO) += Duration::from_nanos(ns as u64);
            }
        }
        Ok(times)
    }

    /// Queues a copy of `bytes` bytes of `buffer` into a mappable buffer and
    /// submits everything queued. Poll the device until `done` is set.
    pub(super) fn start_read(
        &self,
        buffer: &wgpu::Buffer,
        bytes: u64,
    ) -> (wgpu::Buffer, wgpu::SubmissionIndex, MapResult) {
        self.counts.waits.fetch_add(1, Ordering::Relaxed);
        let staging = self.device.create_buffer(&wgpu::BufferDescriptor {
            label: Some("readback"),
            size: bytes,
            usage: wgpu::BufferUsages::MAP_READ | wgpu::BufferUsages::COPY_DST,
            mapped_at_creation: false,
        });
        let index = {
            let mut b = lock(&self.batch);
            b.encoder(&self.device).copy_buffer_to_buffer(buffer, 0, &staging, 0, bytes);
            self.submit(&mut b)
        };
        let done = start_map(&staging);
        (staging, index, done)
    }

    /// `staging`'s contents once `done` says it is mapped, polling the
    /// device until then (for submission `index`, or all of them).
    pub(super) fn wait_mapped(
        &self,
        staging: wgpu::Buffer,
        index: Option<wgpu::SubmissionIndex>,
        done: MapResult,
    ) -> Result<Vec<u8>> {
        let deadline = Instant::now() + TIMEOUT;
        let mapped = loop {
            if let Some(m) = lock(&done).take() {
                break m;
            }
            if Instant::now() > deadline {
                return Err(backend_error("", format!("readback not mapped within {TIMEOUT:?}")));
            }
            self.device
                .poll(wgpu::PollType::Wait { submission_index: index.clone(), timeout: Some(TIMEOUT) })
                .map_err(|e| backend_error("", format!("waiting for the device: {e}")))?;
            // The submission is done, but another thread's poll may be the
            // one running our callback, a moment later.
            std::thread::yield_now();
        };
        self.finish_read(staging, mapped)
    }

    pub(super) fn finish_read(
        &self,
        staging: wgpu::Buffer,
        mapped: std::result::Result<(), String>,
    ) -> Result<Vec<u8>> {
        mapped.map_err(|e| backend_error("", format!("mapping a readback buffer failed: {e}")))?;
        let data = staging
            .get_mapped_range(..)
            .map_err(|e| backend_error("", format!("reading a mapped buffer failed: {e}")))?
            .to_vec();
        staging.unmap();
        self.check_uncaptured()?;
        Ok(data)
    }

    /// The first `bytes` bytes of `buffer`, after every queued command ran.
    pub(crate) fn read(&self, buffer: &wgpu::Buffer, bytes: u64) -> Result<Vec<u8>> {
        let (staging, index, done) = self.start_read(buffer, bytes);
        self.wait_mapped(staging, Some(index), done)
    }

    pub(super) fn check_uncaptured(&self) -> Result<()> {
        let errors = std::mem::take(&mut *lock(&self.uncaptured));
        match errors.is_empty() {
            true => Ok(()),
            false => Err(backend_error("", format!("device errors outside any kernel: {}", errors.join("; ")))),
        }
    }
}

/// Asks for `buffer` to be mapped for reading; the returned slot holds the
/// outcome once a poll of the device has run the callback.
fn start_map(buffer: &wgpu::Buffer) -> MapResult {
    let done = Arc::new(Mutex::new(None));
    let sink = done.clone();
    buffer.map_async(wgpu::MapMode::Read, .., move |r| {
        *lock(&sink) = Some(r.map_err(|e| e.to_string()));
    });
    done
}
