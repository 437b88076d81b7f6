//! Runnable examples of opforge: `cargo run --release --example NAME`.
//! Each prints what it shows and exits non-zero if the check inside fails.

/// Fails the example with a message unless `ok`.
///
/// ```
/// assert!(opforge_examples::check(true, "fine").is_ok());
/// assert!(opforge_examples::check(false, "broken").is_err());
/// ```
pub fn check(ok: bool, what: &str) -> Result<(), String> {
    if ok {
        println!("ok: {what}");
        Ok(())
    } else {
        Err(format!("check failed: {what}"))
    }
}

/// Whether the `wgpu` backend has an adapter, for tests that need one:
/// [`opforge::backend::wgpu::adapter_or_skip`], which prints a SKIP line
/// that `cargo test` shows when it has none, and panics instead when
/// `OPFORGE_REQUIRE_GPU=1` (as CI sets), so that no GPU test passes silently.
///
/// ```
/// if opforge_examples::wgpu_or_skip("my_test") {
///     // ... run the GPU part
/// }
/// ```
pub fn wgpu_or_skip(what: &str) -> bool {
    opforge::backend::wgpu::adapter_or_skip(what)
}

pub mod precision;
pub mod text;
pub mod transformer;

pub mod cli {
    //! What the training examples share: their arguments, the held-out
    //! split, and the epoch loop with its progress lines and profile.

    use std::error::Error;
    use std::path::PathBuf;
    use std::time::Instant;

    use opforge::train::{load_checkpoint, save_checkpoint, Adam};
    use opforge::{BackendId, DType, Variable};

    use crate::digits::{self, Digits};

    /// A training example's command line.
    #[derive(Debug, Clone, PartialEq)]
    pub struct Args {
        /// Where the model lives (`--backend`, default `cpu`).
        pub backend: BackendId,
        /// Epochs to train (`--epochs`).
        pub epochs: usize,
        /// Seeds the split, the initial weights and the batch order (`--seed`).
        pub seed: u64,
        /// Where to write a Chrome trace of the first epoch (and its SVG
        /// timeline beside it), if anywhere (`--profile`).
        pub profile: Option<PathBuf>,
        /// Where to write a checkpoint after every epoch, if anywhere (`--save`).
        pub save: Option<PathBuf>,
        /// A checkpoint to go on from, if any (`--resume`): training starts
        /// at the epoch after the last one it holds.
        pub resume: Option<PathBuf>,
        /// Whether to run every fused op op by op (`--unfused`, through
        /// `opforge::fuse::unfused`), to compare against the fused run.
        pub unfused: bool,
        /// At most this many steps per epoch (`--steps`), to time a run
        /// without waiting for whole epochs; `None` runs whole epochs.
        /// Only `train_transformer` honours it.
        pub steps: Option<usize>,
        /// The dtype the forward pass computes in (`--dtype f32|f16|bf16|f64`,
        /// default f32), from f32 master weights; `train_cnn` and
        /// `train_transformer` honour it.
        pub dtype: DType,
        /// Whether to run every step eagerly (`--eager`), op by op, instead
        /// of capturing it on an epoch's first step and replaying it
        /// (`opforge::capture`), to compare against the replayed run.
        pub eager: bool,
        /// Whether to train data-parallel across the ranks `mpiexec`
        /// started (`--data-parallel`; built with the `mpi` feature): each
        /// rank takes its shard of every batch, and the gradients are
        /// averaged before each update (`opforge_dist::DataParallel`).
        pub data_parallel: bool,
    }

    impl Args {
        /// Parses `args` (without the program name) for example `name`.
        ///
        /// ```
        /// use opforge_examples::cli::Args;
        /// let a = Args::parse("train_mlp", 30, ["--epochs", "3", "--seed=7"].map(String::from)).unwrap();
        /// assert_eq!((a.epochs, a.seed, a.backend), (3, 7, opforge::BackendId::Cpu));
        /// assert!(Args::parse("train_mlp", 30, ["--epochs", "0"].map(String::from)).is_err());
        /// let a = Args::parse("train_cnn", 40, ["--save", "a.safetensors", "--resume=b.safetensors"].map(String::from));
        /// let a = a.unwrap();
        /// assert_eq!((a.save.unwrap().to_str(), a.resume.unwrap().to_str()), (Some("a.safetensors"), Some("b.safetensors")));
        /// assert!(Args::parse("train_transformer", 3, ["--unfused".to_owned()]).unwrap().unfused);
        /// assert!(Args::parse("train_mlp", 3, ["--eager".to_owned()]).unwrap().eager);
        /// assert!(Args::parse("train_mlp", 3, ["--data-parallel".to_owned()]).unwrap().data_parallel);
        /// assert_eq!(Args::parse("train_transformer", 3, ["--steps=50".to_owned()]).unwrap().steps, Some(50));
        /// assert_eq!(Args::parse("train_cnn", 3, ["--dtype=f16".to_owned()]).unwrap().dtype, opforge::DType::F16);
        /// assert!(Args::parse("train_cnn", 3, ["--dtype=i32".to_owned()]).is_err());
        /// ```
        pub fn parse(
            name: &str,
            default_epochs: usize,
            args: impl IntoIterator<Item = String>,
        ) -> Result<Args, String> {
            let usage = format!(
                "usage: {name} [--backend NAME] [--epochs N] [--seed N] [--profile TRACE.json] \
                 [--save CHECKPOINT] [--resume CHECKPOINT] [--unfused] [--eager] [--steps N] [--dtype f32|f16|bf16|f64] \
                 [--data-parallel]"
            );
            let mut parsed = Args {
                backend: BackendId::Cpu,
                epochs: default_epochs,
                seed: 42,
                profile: None,
                save: None,
                resume: None,
                unfused: false,
                steps: None,
                dtype: DType::F32,
                eager: false,
                data_parallel: false,
            };
            let mut it = args.into_iter();
            while let Some(arg) = it.next() {
                let (flag, inline) = match arg.split_once('=') {
                    Some((f, v)) => (f.to_owned(), Some(v.to_owned())),
                    None => (arg.clone(), None),
                };
                let mut value = || inline.clone().or_else(|| it.next()).ok_or(format!("{flag} needs a value"));
                match flag.as_str() {
                    "--backend" => {
                        let name = value()?;
                        parsed.backend = BackendId::from_name(&name).ok_or_else(|| {
                            let known: Vec<&str> = BackendId::all().into_iter().map(|b| b.name()).collect();
                            format!("unknown backend `{name}`; this build has: {}", known.join(", "))
                        })?;
                    }
                    "--epochs" => {
                        let v = value()?;
                        parsed.epochs = v
                            .parse()
                            .ok()
                            .filter(|&n| n > 0)
                            .ok_or(format!("--epochs takes a positive number, not `{v}`"))?;
                    }
                    "--profile" => parsed.profile = Some(value()?.into()),
                    "--save" => parsed.save = Some(value()?.into()),
                    "--resume" => parsed.resume = Some(value()?.into()),
                    "--unfused" => parsed.unfused = true,
                    "--eager" => parsed.eager = true,
                    "--data-parallel" => parsed.data_parallel = true,
                    "--steps" => {
                        let v = value()?;
                        let steps = v.parse().ok().filter(|&n| n > 0);
                        parsed.steps = Some(steps.ok_or(format!("--steps takes a positive number, not `{v}`"))?);
                    }
                    "--dtype" => {
                        let v = value()?;
                        parsed.dtype = DType::from_name(&v)
                            .filter(|d| d.is_float())
                            .ok_or(format!("--dtype takes a float dtype (f32, f16, bf16, f64), not `{v}`"))?;
                    }
                    "--seed" => {
                        let v = value()?;
                        parsed.seed = v.parse().map_err(|_| format!("--seed takes a number, not `{v}`"))?;
                    }
                    "-h" | "--help" => {
                        println!("{usage}");
                        std::process::exit(0);
                    }
                    _ => return Err(format!("unknown argument `{arg}`; {usage}")),
                }
            }
            Ok(parsed)
        }

        /// The process's arguments, for example `name`.
        pub fn from_env(name: &str, default_epochs: usize) -> Result<Args, String> {
            Args::parse(name, default_epochs, std::env::args().skip(1))
        }
    }

    /// Makes this thread one of the cpu backend's workers (see
    /// [`opforge::backend::cpu::work_on_this_thread`]), checks that
    /// `backend` is available and says which adapter it is.
    pub fn check_backend(backend: BackendId) -> Result<(), Box<dyn Error>> {
        // Fails only where the pool exists already (a second call in one
        // process, as in the tests): kernels then run as they would anyway.
        let _ = opforge::backend::cpu::work_on_this_thread(None);
        let info = opforge::backends().into_iter().find(|b| b.backend == backend).ok_or("a listed backend")?;
        if !info.available {
            return Err(format!("backend `{backend}` is not available: {}", info.description).into());
        }
        println!("backend `{backend}`: {}", info.description);
        Ok(())
    }

    /// Runs a training example's `main` as `args` asks: in this process,
    /// or with `--data-parallel` as one rank of the job `mpiexec` started
    /// (built with the `mpi` feature): MPI is initialized, only rank 0
    /// prints, every epoch trains data-parallel across the ranks
    /// ([`crate::fit::with_data_parallel`]), and an error on any rank ends
    /// the whole job, naming the rank.
    ///
    /// ```
    /// use opforge_examples::cli::{launch, Args};
    /// let args = Args::parse("train_mlp", 1, []).unwrap();
    /// assert!(launch(&args, || Ok(())).is_ok());
    /// let f16 = Args::parse("train_cnn", 1, ["--data-parallel", "--dtype=f16"].map(String::from)).unwrap();
    /// assert!(launch(&f16, || Ok(())).unwrap_err().to_string().contains("loss scale"));
    /// ```
    pub fn launch(args: &Args, run: impl FnOnce() -> Result<(), Box<dyn Error>>) -> Result<(), Box<dyn Error>> {
        if !args.data_parallel {
            return run();
        }
        if args.dtype == DType::F16 {
            // Each rank would skip an overflowing step on its own, and the
            // ranks that did not would wait in the all-reduce for it.
            return Err("--data-parallel does not train under a loss scale (--dtype f16) yet: \
                        a rank that overflows would skip a step the others take"
                .into());
        }
        data_parallel(run)
    }

    /// `run` as one rank of an MPI job.
    #[cfg(feature = "mpi")]
    fn data_parallel(run: impl FnOnce() -> Result<(), Box<dyn Error>>) -> Result<(), Box<dyn Error>> {
        use std::os::fd::AsRawFd;
        let mpi = opforge_dist::init()?;
        let world = opforge_dist::Communicator::world();
        if world.rank() != 0 {
            let null = std::fs::File::options().write(true).open("/dev/null")?;
            // SAFETY: dup2 onto stdout's descriptor, which stays open.
            unsafe { libc::dup2(null.as_raw_fd(), 1) };
        }
        println!("data-parallel across {} ranks (MPI): each takes its shard of every batch", world.size());
        let dp = opforge_dist::DataParallel::new(world);
        mpi.run(|_| crate::fit::with_data_parallel(Some(dp), run));
        Ok(())
    }

    /// Without MPI there are no ranks to train across.
    #[cfg(not(feature = "mpi"))]
    fn data_parallel(run: impl FnOnce() -> Result<(), Box<dyn Error>>) -> Result<(), Box<dyn Error>> {
        let _ = run;
        Err("--data-parallel needs MPI: build the example with `--features mpi` \
             (cargo build --release -p opforge-examples --features mpi --example train_mlp) \
             and start it with `mpiexec -n 2`"
            .into())
    }

    /// Checks that `args.backend` is available, says which adapter it is,
    /// and splits the digits into a training set and a held-out fifth.
    pub fn start(args: &Args) -> Result<(Digits, Digits), Box<dyn Error>> {
        check_backend(args.backend)?;
        let data = digits::load()?;
        let (train, test) = data.split(0.2, args.seed);
        println!(
            "digits: {} images, {} to train on, {} held out for testing (seed {})",
            data.len(),
            train.len(),
            test.len(),
            args.seed
        );
        Ok((train, test))
    }

    /// `[=====     ]`: `done` of `total` in `width` characters.
    ///
    /// ```
    /// assert_eq!(opforge_examples::cli::progress_bar(1, 4, 8), "[==      ]");
    /// ```
    pub fn progress_bar(done: usize, total: usize, width: usize) -> String {
        let filled = done * width / total.max(1);
        format!("[{}{}]", "=".repeat(filled), " ".repeat(width - filled))
    }

    /// Runs `epoch(number, adam)` for each epoch (from 1), which trains
    /// `vars` in `steps_per_epoch` steps of `adam`, printing its loss and
    /// the time so far, with epoch 1 profiled when `--profile` asks; then
    /// says how long training took.
    ///
    /// With `--resume`, `vars` and `adam` are first loaded from that
    /// checkpoint and training goes on at the epoch after the last one it
    /// holds (Adam's step count over `steps_per_epoch`); with `--save`, a
    /// checkpoint is written after every epoch. `epoch` must draw whatever
    /// it draws (the batch order) from its epoch number, as the examples
    /// do, for a resumed run to repeat the uninterrupted one.
    ///
    /// Returns each epoch's loss, of the epochs it ran.
    pub fn train(
        args: &Args,
        adam: &mut Adam,
        vars: &[&Variable],
        steps_per_epoch: usize,
        mut epoch: impl FnMut(usize, &mut Adam) -> opforge::Result<f64>,
    ) -> Result<Vec<f64>, Box<dyn Error>> {
        let start = Instant::now();
        let mut first = 1;
        if let Some(path) = &args.resume {
            load_checkpoint(path, vars, adam)?;
            let steps = adam.iterations()? as usize;
            if !steps.is_multiple_of(steps_per_epoch.max(1)) {
                return Err(format!(
                    "checkpoint `{}` holds {steps} steps, not whole epochs of {steps_per_epoch}: \
                     was it saved by this example, with this data and batch size?",
                    path.display()
                )
                .into());
            }
            first = steps / steps_per_epoch.max(1) + 1;
            println!("resumed from {}: {} epochs ({steps} steps) done", path.display(), first - 1);
        }
        let dp = crate::fit::data_parallel();
        if let Some(dp) = dp {
            // Every rank starts from rank 0's weights (and its checkpoint's).
            dp.broadcast_variables(vars)?;
        }
        // Data-parallel, rank 0 writes the checkpoints: every rank holds the same.
        let saves = args.save.as_ref().filter(|_| dp.is_none_or(|dp| dp.communicator().rank() == 0));
        if let Some(path) = saves {
            println!("saving a checkpoint to {} after every epoch", path.display());
        }
        let mut losses = Vec::new();
        for e in first..=args.epochs {
            let mut run = || {
                crate::fit::with_eager(args.eager, || match args.unfused {
                    true => opforge::fuse::unfused(|| epoch(e, adam)),
                    false => epoch(e, adam),
                })
            };
            let loss = match (&args.profile, e) {
                (Some(path), 1) => {
                    let (loss, profile) = opforge::profile(run);
                    profile.write_chrome_trace(path)?;
                    let svg = path.with_extension("svg");
                    profile.write_timeline_svg(&svg)?;
                    println!("{profile}");
                    println!(
                        "profile of epoch 1: {} (open it in ui.perfetto.dev or chrome://tracing) and {}",
                        path.display(),
                        svg.display()
                    );
                    loss?
                }
                _ => run()?,
            };
            if let Some(path) = saves {
                save_checkpoint(path, vars, adam)?;
            }
            println!(
                "epoch {e:>2}/{} {} loss {loss:.4}  ({:.2} s)",
                args.epochs,
                progress_bar(e, args.epochs, 20),
                start.elapsed().as_secs_f64()
            );
            losses.push(loss);
        }
        let elapsed = start.elapsed().as_secs_f64();
        println!("trained {} epochs ({} steps in all) in {elapsed:.2} s", losses.len(), adam.iterations()?);
        Ok(losses)
    }
}

pub mod digits {
    //! The 8x8 handwritten digits of `examples/data/digits.csv.gz` (1,797
    //! images, CC BY 4.0, see `examples/data/README.md`): loading, scaling
    //! to [0, 1], a seeded shuffle split and minibatches as tensors.

    use std::io::Read;

    use opforge::Tensor;

    /// Pixels per image (8 x 8).
    pub const PIXELS: usize = 64;
    /// Digit classes, 0 to 9.
    pub const CLASSES: usize = 10;

    /// Where the data set lives in the source tree.
    pub const PATH: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/data/digits.csv.gz");

    /// Images and their labels, row `i` of `images` (64 values in [0, 1]) showing digit `labels[i]`.
    #[derive(Debug, Clone, Default)]
    pub struct Digits {
        /// Row-major, `PIXELS` values per image, scaled from 0..=16 to [0, 1].
        pub images: Vec<f32>,
        /// One label (0..=9) per image.
        pub labels: Vec<u8>,
    }

    /// Reads and parses [`PATH`].
    ///
    /// ```
    /// let d = opforge_examples::digits::load()?;
    /// assert_eq!(d.len(), 1797);
    /// assert!(d.images.iter().all(|v| (0.0..=1.0).contains(v)));
    /// # Ok::<(), String>(())
    /// ```
    pub fn load() -> Result<Digits, String> {
        let file = std::fs::File::open(PATH).map_err(|e| format!("cannot open {PATH}: {e}"))?;
        let mut csv = String::new();
        flate2::read::GzDecoder::new(file).read_to_string(&mut csv).map_err(|e| format!("cannot read {PATH}: {e}"))?;
        parse(&csv)
    }

    /// Parses the CSV: per line 64 pixel values (0 to 16) and the label.
    ///
    /// ```
    /// let row = format!("{},16,3\n", vec!["0"; 63].join(","));
    /// let d = opforge_examples::digits::parse(&row)?;
    /// assert_eq!((d.len(), d.labels[0], d.images[63]), (1, 3, 1.0));
    /// assert!(opforge_examples::digits::parse("1,2,3\n").is_err());
    /// # Ok::<(), String>(())
    /// ```
    pub fn parse(csv: &str) -> Result<Digits, String> {
        let mut out = Digits::default();
        for (n, line) in csv.lines().enumerate().filter(|(_, l)| !l.trim().is_empty()) {
            let fields: Vec<&str> = line.trim().split(',').collect();
            if fields.len() != PIXELS + 1 {
                return Err(format!("line {}: {} fields, expected {}", n + 1, fields.len(), PIXELS + 1));
            }
            let num = |s: &str| s.trim().parse::<f32>().map_err(|e| format!("line {}: `{s}`: {e}", n + 1));
            for f in &fields[..PIXELS] {
                let v = num(f)?;
                if !(0.0..=16.0).contains(&v) {
                    return Err(format!("line {}: pixel {v} is outside 0..=16", n + 1));
                }
                out.images.push(v / 16.0);
            }
            let label = num(fields[PIXELS])?;
            if label.fract() != 0.0 || !(0.0..CLASSES as f32).contains(&label) {
                return Err(format!("line {}: label {label} is not a digit", n + 1));
            }
            out.labels.push(label as u8);
        }
        Ok(out)
    }

    impl Digits {
        /// Number of images.
        pub fn len(&self) -> usize {
            self.labels.len()
        }

        /// Whether there are no images.
        pub fn is_empty(&self) -> bool {
            self.labels.is_empty()
        }

        /// The images at `indices`, in that order.
        ///
        /// ```
        /// use opforge_examples::digits::{parse, PIXELS};
        /// let csv: String = (0..3).map(|i| format!("{},{i}\n", vec!["0"; PIXELS].join(","))).collect();
        /// let d = parse(&csv)?;
        /// assert_eq!(d.select(&[2, 0]).labels, vec![2, 0]);
        /// assert!(!d.is_empty() && d.select(&[]).is_empty());
        /// # Ok::<(), String>(())
        /// ```
        pub fn select(&self, indices: &[usize]) -> Digits {
            let mut out = Digits::default();
            for &i in indices {
                out.images.extend_from_slice(&self.images[i * PIXELS..(i + 1) * PIXELS]);
                out.labels.push(self.labels[i]);
            }
            out
        }

        /// Shuffles with `seed` and splits off the last `test_fraction` as a
        /// held-out set: `(train, test)`.
        ///
        /// ```
        /// use opforge_examples::digits::{parse, PIXELS};
        /// let csv: String = (0..10).map(|i| format!("{},{i}\n", vec!["1"; PIXELS].join(","))).collect();
        /// let (train, test) = parse(&csv)?.split(0.2, 7);
        /// assert_eq!((train.len(), test.len()), (8, 2));
        /// let mut all: Vec<u8> = train.labels.iter().chain(&test.labels).copied().collect();
        /// all.sort();
        /// assert_eq!(all, (0..10).collect::<Vec<u8>>());
        /// # Ok::<(), String>(())
        /// ```
        pub fn split(&self, test_fraction: f64, seed: u64) -> (Digits, Digits) {
            let order = shuffled(self.len(), seed);
            let n_test = ((self.len() as f64) * test_fraction).round() as usize;
            let (train, test) = order.split_at(self.len() - n_test.min(self.len()));
            (self.select(train), self.select(test))
        }

        /// The images as an `f32[n, 64]` tensor.
        pub fn images_tensor(&self) -> opforge::Result<Tensor> {
            Tensor::from_slice(&self.images, &[self.len(), PIXELS])
        }

        /// The labels one-hot, as an `f32[n, 10]` tensor.
        ///
        /// ```
        /// use opforge_examples::digits::{parse, PIXELS};
        /// let d = parse(&format!("{},3\n", vec!["8"; PIXELS].join(",")))?;
        /// assert_eq!(d.images_tensor().unwrap().to_vec::<f32>().unwrap(), vec![0.5; PIXELS]);
        /// let y = d.labels_one_hot().unwrap().to_vec::<f32>().unwrap();
        /// assert_eq!((y[3], y.iter().sum::<f32>()), (1.0, 1.0));
        /// # Ok::<(), String>(())
        /// ```
        pub fn labels_one_hot(&self) -> opforge::Result<Tensor> {
            let mut v = vec![0.0f32; self.len() * CLASSES];
            for (i, &l) in self.labels.iter().enumerate() {
                v[i * CLASSES + l as usize] = 1.0;
            }
            Tensor::from_vec(v, &[self.len(), CLASSES])
        }
    }

    /// `0..n` in a seeded random order (Fisher-Yates with SplitMix64), the same on every platform.
    ///
    /// ```
    /// let a = opforge_examples::digits::shuffled(100, 1);
    /// assert_eq!(a, opforge_examples::digits::shuffled(100, 1));
    /// assert_ne!(a, opforge_examples::digits::shuffled(100, 2));
    /// let mut s = a.clone();
    /// s.sort();
    /// assert_eq!(s, (0..100).collect::<Vec<_>>());
    /// ```
    pub fn shuffled(n: usize, seed: u64) -> Vec<usize> {
        let mut state = seed;
        let mut next = move || {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        let mut order: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            let j = (next() % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
        order
    }
}

pub mod fit {
    //! What training a classifier of the digits takes, whatever the model:
    //! an epoch of minibatches and the accuracy, shared by the MLP and the CNN.

    use opforge::losses::softmax_cross_entropy;
    use opforge::train::Adam;
    use opforge::{ops, BackendId, DType, Tensor, Variable};
    use opforge_dist::DataParallel;

    use crate::digits::{self, Digits};
    use crate::precision::Precision;

    thread_local! {
        static EAGER: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
    }

    /// Runs `f` with this thread's training steps eager (`true`: op by op,
    /// as written) or captured and replayed (`false`, the default; see
    /// [`opforge::capture`]), and restores the setting afterwards.
    ///
    /// ```
    /// use opforge_examples::fit::{eager, with_eager};
    /// assert!(!eager());
    /// assert!(with_eager(true, eager));
    /// assert!(!eager(), "only inside");
    /// ```
    pub fn with_eager<T>(eager: bool, f: impl FnOnce() -> T) -> T {
        struct Restore(bool);
        impl Drop for Restore {
            fn drop(&mut self) {
                EAGER.set(self.0);
            }
        }
        let _restore = Restore(EAGER.replace(eager));
        f()
    }

    thread_local! {
        static DATA_PARALLEL: std::cell::Cell<Option<DataParallel>> = const { std::cell::Cell::new(None) };
    }

    /// Runs `f` with this thread's training data-parallel across `dp`'s
    /// ranks (each step on this rank's shard of its batch, its gradients
    /// averaged before the update), or not (`None`, the default), and
    /// restores the setting afterwards.
    ///
    /// ```
    /// use opforge_dist::{Communicator, DataParallel};
    /// use opforge_examples::fit::{data_parallel, with_data_parallel};
    /// let dp = DataParallel::new(Communicator::world());
    /// assert_eq!(with_data_parallel(Some(dp), data_parallel), Some(dp));
    /// assert_eq!(data_parallel(), None, "only inside");
    /// ```
    pub fn with_data_parallel<T>(dp: Option<DataParallel>, f: impl FnOnce() -> T) -> T {
        struct Restore(Option<DataParallel>);
        impl Drop for Restore {
            fn drop(&mut self) {
                DATA_PARALLEL.set(self.0);
            }
        }
        let _restore = Restore(DATA_PARALLEL.replace(dp));
        f()
    }

    /// How this thread trains data-parallel, if it does (see [`with_data_parallel`]).
    ///
    /// ```
    /// assert_eq!(opforge_examples::fit::data_parallel(), None);
    /// ```
    pub fn data_parallel() -> Option<DataParallel> {
        DATA_PARALLEL.get()
    }

    /// Whether this thread's training steps run eagerly (see [`with_eager`]).
    ///
    /// ```
    /// assert!(!opforge_examples::fit::eager());
    /// ```
    pub fn eager() -> bool {
        EAGER.get()
    }

    /// Share of `data` whose most likely class under `forward` (logits
    /// `f32[n, 10]` for images `f32[n, 64]`) is its label.
    ///
    /// ```
    /// use opforge::{BackendId, Tensor};
    /// let data = opforge_examples::digits::load()?;
    /// // Equal logits, whose first largest is class 0: right for the zeros, about a tenth.
    /// let zero = |x: &Tensor| Tensor::zeros(&[x.shape()[0], 10], opforge::DType::F32);
    /// let accuracy = opforge_examples::fit::accuracy(BackendId::Cpu, &data, zero)?;
    /// assert!((0.05..0.15).contains(&accuracy));
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn accuracy(
        backend: BackendId,
        data: &Digits,
        forward: impl Fn(&Tensor) -> opforge::Result<Tensor>,
    ) -> opforge::Result<f32> {
        let logits = opforge::no_grad(|| forward(&data.images_tensor()?.to_backend(backend)?))?;
        let predicted = ops::argmax(&logits, -1)?;
        let labels = Tensor::from_vec(data.labels.iter().map(|&l| l as i32).collect(), &[data.len()])?;
        let right = ops::equal(&predicted, &labels.to_backend(backend)?)?;
        ops::mean(&ops::cast(&right, DType::F32)?, None, false)?.to_scalar::<f32>()
    }

    /// How an epoch cuts its data: batches of `size` in an order drawn from
    /// `seed`, each batch's images (`f32[n, 64]`, number `i` of the epoch)
    /// passed through `prepare` (augmentation; identity for none).
    pub struct Batches<P> {
        /// Images per step.
        pub size: usize,
        /// Seeds the order.
        pub seed: u64,
        /// Maps a batch's images and its number to the model's input.
        pub prepare: P,
    }

    /// Trains one epoch on `train` with softmax cross-entropy and `adam`,
    /// updating `vars`, each step as `precision` takes it (under a loss
    /// scale in f16); returns the mean loss. The losses stay on
    /// `backend` and are added up and read back once, at the end: a read
    /// per step would make each step wait for the GPU. The step is captured
    /// on its first run (and on a last, smaller batch) and replayed after
    /// (`opforge::capture`), unless [`eager`] or under a loss scale, which
    /// reads whether a step overflowed on the host.
    ///
    /// ```
    /// use opforge_examples::{digits, fit, mlp::Mlp};
    /// let (train, _) = digits::load()?.split(0.9, 1);
    /// let m = Mlp::new(7, opforge::BackendId::Cpu)?;
    /// let mut adam = opforge::train::Adam::new(0.003);
    /// let batches = || fit::Batches { size: 32, seed: 1, prepare: |x, _| Ok(x) };
    /// let first = fit::train_epoch(m.backend(), &train, &mut adam, &Default::default(), &m.variables(), batches(), |x| m.forward(x))?;
    /// let second = fit::train_epoch(m.backend(), &train, &mut adam, &Default::default(), &m.variables(), batches(), |x| m.forward(x))?;
    /// assert!(second < first, "{second} after {first}");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn train_epoch<P: Fn(Tensor, usize) -> opforge::Result<Tensor>>(
        backend: BackendId,
        train: &Digits,
        adam: &mut Adam,
        precision: &Precision,
        vars: &[&Variable],
        batches: Batches<P>,
        forward: impl Fn(&Tensor) -> opforge::Result<Tensor>,
    ) -> opforge::Result<f64> {
        let (mut losses, mut sizes) = (Vec::new(), Vec::new());
        let eager = eager() || precision.loss_scale().is_some();
        let dp = data_parallel();
        let mut step = opforge::capture::capture(|xy: &[Tensor]| {
            let loss = || softmax_cross_entropy(&xy[1], &forward(&xy[0])?);
            Ok(vec![match &dp {
                Some(dp) => precision.minimize(&mut dp.optimizer(adam), loss, vars)?,
                None => precision.minimize(adam, loss, vars)?,
            }])
        });
        for (i, batch) in digits::shuffled(train.len(), batches.seed).chunks(batches.size.max(1)).enumerate() {
            let batch = train.select(batch);
            let x = (batches.prepare)(batch.images_tensor()?.to_backend(backend)?, i)?;
            let y = batch.labels_one_hot()?.to_backend(backend)?;
            // Data-parallel: this rank's rows of the batch, augmented as one.
            let (x, y, batch) = match &dp {
                Some(dp) => {
                    (dp.shard_of(&x)?, dp.shard_of(&y)?, batch.select(&dp.shard(batch.len()).collect::<Vec<_>>()))
                }
                None => (x, y, batch),
            };
            let loss = match eager {
                true => step.eager(&[&x, &y])?,
                false => step.run(&[&x, &y])?,
            };
            losses.extend(loss);
            sizes.push(batch.len() as f32);
        }
        if losses.is_empty() {
            return Ok(0.0);
        }
        // Weighed by batch size in three kernels at the end, not per step.
        let seen: f32 = sizes.iter().sum();
        let sizes = Tensor::from_vec(sizes, &[losses.len()])?.to_backend(backend)?;
        let total = ops::sum(&ops::mul(&ops::stack(&losses, 0)?, &sizes)?, None, false)?;
        Ok(f64::from(total.to_scalar::<f32>()?) / f64::from(seen))
    }
}

pub mod mlp {
    //! The model `train_mlp` trains: 64 -> 128 relu -> 10 on the digits,
    //! softmax cross-entropy, Adam, minibatches, on any backend. The
    //! example and the tests share it, so that what the tests train on each
    //! backend is what the example runs.

    use opforge::kernels::Activation;
    use opforge::train::Adam;
    use opforge::{ops, BackendId, DType, Tensor, Variable};

    use crate::digits::{Digits, CLASSES, PIXELS};

    /// Units of the hidden layer.
    pub const HIDDEN: usize = 128;
    /// Images per training step.
    pub const BATCH: usize = 32;
    /// Adam's learning rate.
    pub const LEARNING_RATE: f64 = 0.003;

    /// The model's parameters, two dense layers, on one backend.
    pub struct Mlp {
        /// `f32[64, 128]`
        pub w1: Variable,
        /// `f32[128]`
        pub b1: Variable,
        /// `f32[256, 10]`
        pub w2: Variable,
        /// `f32[10]`
        pub b2: Variable,
    }

    impl Mlp {
        /// Fresh weights from `seed`, made on the cpu and moved to `backend`,
        /// so every backend starts from the same ones.
        ///
        /// ```
        /// let m = opforge_examples::mlp::Mlp::new(7, opforge::BackendId::Cpu)?;
        /// assert_eq!(m.w1.value().shape(), &[64, 128]);
        /// # Ok::<(), opforge::Error>(())
        /// ```
        pub fn new(seed: u64, backend: BackendId) -> opforge::Result<Mlp> {
            // He initialization for the relu layer, Glorot-like for the output.
            let he = (2.0 / PIXELS as f32).sqrt();
            let glorot = (2.0 / (HIDDEN + CLASSES) as f32).sqrt();
            let var = |name: &str, t: Tensor| Ok::<_, opforge::Error>(Variable::named(name, t.to_backend(backend)?));
            Ok(Mlp {
                w1: var("dense1/kernel", Tensor::random_normal(&[PIXELS, HIDDEN], 0.0, he, seed)?)?,
                b1: var("dense1/bias", Tensor::zeros(&[HIDDEN], DType::F32)?)?,
                w2: var(
                    "dense2/kernel",
                    Tensor::random_normal(&[HIDDEN, CLASSES], 0.0, glorot, seed.wrapping_add(1))?,
                )?,
                b2: var("dense2/bias", Tensor::zeros(&[CLASSES], DType::F32)?)?,
            })
        }

        /// The backend the parameters live on.
        ///
        /// ```
        /// let m = opforge_examples::mlp::Mlp::new(7, opforge::BackendId::Cpu)?;
        /// assert_eq!(m.backend(), opforge::BackendId::Cpu);
        /// # Ok::<(), opforge::Error>(())
        /// ```
        pub fn backend(&self) -> BackendId {
            self.w1.value().backend()
        }

        /// The trainable variables.
        ///
        /// ```
        /// let m = opforge_examples::mlp::Mlp::new(7, opforge::BackendId::Cpu)?;
        /// assert_eq!(m.variables().map(|v| v.name().to_owned())[3], "dense2/bias");
        /// # Ok::<(), opforge::Error>(())
        /// ```
        pub fn variables(&self) -> [&Variable; 4] {
            [&self.w1, &self.b1, &self.w2, &self.b2]
        }

        /// Logits, `f32[n, 10]`, for images `f32[n, 64]` on the model's backend.
        ///
        /// ```
        /// use opforge::{BackendId, Tensor};
        /// let m = opforge_examples::mlp::Mlp::new(7, BackendId::Cpu)?;
        /// let logits = m.forward(&Tensor::zeros(&[3, 64], opforge::DType::F32)?)?;
        /// assert_eq!(logits.shape(), &[3, 10]);
        /// # Ok::<(), opforge::Error>(())
        /// ```
        pub fn forward(&self, x: &Tensor) -> opforge::Result<Tensor> {
            // Each layer is one kernel: product, bias and activation.
            let dense = |x: &Tensor, w: &Variable, b: &Variable, activation| {
                ops::fused_matmul(x, &w.value(), Some(&b.value()), None, false, false, activation, 0.0)
            };
            dense(&dense(x, &self.w1, &self.b1, Activation::Relu)?, &self.w2, &self.b2, Activation::Linear)
        }

        /// Share of `data` whose most likely class is its label.
        ///
        /// ```
        /// let m = opforge_examples::mlp::Mlp::new(7, opforge::BackendId::Cpu)?;
        /// let data = opforge_examples::digits::load()?;
        /// let accuracy = m.accuracy(&data)?;
        /// assert!((0.0..=1.0).contains(&accuracy));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn accuracy(&self, data: &Digits) -> opforge::Result<f32> {
            crate::fit::accuracy(self.backend(), data, |x| self.forward(x))
        }

        /// Trains one epoch on `train`, in minibatches of [`BATCH`] in an
        /// order drawn from `seed`; returns the mean loss.
        ///
        /// ```
        /// use opforge_examples::{digits, mlp::Mlp};
        /// let (train, _) = digits::load()?.split(0.9, 1);
        /// let m = Mlp::new(7, opforge::BackendId::Cpu)?;
        /// let mut adam = opforge::train::Adam::new(0.003);
        /// let first = m.train_epoch(&train, &mut adam, 1)?;
        /// let second = m.train_epoch(&train, &mut adam, 2)?;
        /// assert!(second < first, "{second} after {first}");
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn train_epoch(&self, train: &Digits, adam: &mut Adam, seed: u64) -> opforge::Result<f64> {
            let batches = crate::fit::Batches { size: BATCH, seed, prepare: |x, _| Ok(x) };
            let f32 = crate::precision::Precision::default();
            crate::fit::train_epoch(self.backend(), train, adam, &f32, &self.variables(), batches, |x| self.forward(x))
        }
    }

    /// The shuffle seed of `epoch` (from 1) of a run seeded `seed`.
    ///
    /// ```
    /// use opforge_examples::mlp::epoch_seed;
    /// assert_ne!(epoch_seed(42, 1), epoch_seed(42, 2));
    /// ```
    pub fn epoch_seed(seed: u64, epoch: usize) -> u64 {
        seed ^ (epoch as u64) << 32
    }
}

pub mod cnn {
    //! The model `train_cnn` trains: two 3x3 convolutions with relu and 2x2
    //! max pooling, then a dense layer, on the 8x8 digits as NHWC images,
    //! softmax cross-entropy, Adam, minibatches, on any backend. The example
    //! and the tests share it.

    use opforge::kernels::{Activation, Padding};
    use opforge::train::Adam;
    use opforge::{ops, BackendId, DType, Tensor, Variable};

    use crate::digits::{Digits, CLASSES};
    use crate::precision::Precision;

    /// Channels of the first and second convolutions.
    pub const CHANNELS: [usize; 2] = [32, 64];
    /// Images per training step.
    pub const BATCH: usize = 32;
    /// Adam's learning rate at the start; see [`learning_rate`].
    pub const LEARNING_RATE: f64 = 0.003;
    /// Side of the square images.
    const SIDE: usize = 8;
    /// Features after the second pooling: 2 x 2 pixels of the second conv's channels.
    const FEATURES: usize = 2 * 2 * CHANNELS[1];

    /// The learning rate of `epoch` (from 1) of `epochs`: [`LEARNING_RATE`]
    /// decayed along a half cosine, so that the last epochs settle.
    ///
    /// ```
    /// use opforge_examples::cnn::{learning_rate, LEARNING_RATE};
    /// assert_eq!(learning_rate(1, 20), LEARNING_RATE);
    /// assert!(learning_rate(20, 20) < LEARNING_RATE / 50.0);
    /// ```
    pub fn learning_rate(epoch: usize, epochs: usize) -> f64 {
        let progress = (epoch - 1) as f64 / epochs.max(1) as f64;
        LEARNING_RATE * 0.5 * (1.0 + (std::f64::consts::PI * progress).cos())
    }

    /// Images `f32[n, 64]` shifted by up to a pixel in each direction, the
    /// same way for the whole batch (`PadV2` then `Slice`), with the
    /// direction drawn from `seed`: the network learns digits that sit a
    /// little off-centre, as held-out ones do.
    ///
    /// ```
    /// use opforge::Tensor;
    /// let x = Tensor::from_vec((0..64).map(|v| v as f32).collect::<Vec<_>>(), &[1, 64])?;
    /// let moved = opforge_examples::cnn::shifted(&x, 3)?;
    /// assert_eq!(moved.shape(), &[1, 64]);
    /// # Ok::<(), opforge::Error>(())
    /// ```
    pub fn shifted(x: &Tensor, seed: u64) -> opforge::Result<Tensor> {
        let n = x.shape()[0] as i64;
        let side = SIDE as i64;
        let mix = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 32;
        let (dy, dx) = ((mix % 3) as i64, (mix / 3 % 3) as i64);
        let image = ops::reshape(x, &[n, side, side, 1])?;
        let padded = ops::pad(&image, &[vec![0, 0], vec![1, 1], vec![1, 1], vec![0, 0]], 0.0)?;
        let moved = ops::slice(&padded, &[0, dy, dx, 0], &[-1, side, side, -1])?;
        ops::reshape(&moved, &[n, side * side])
    }

    /// The model's parameters on one backend.
    pub struct Cnn {
        /// `f32[3, 3, 1, 32]`
        pub conv1: Variable,
        /// `f32[64]`
        pub bias1: Variable,
        /// `f32[3, 3, 32, 64]`
        pub conv2: Variable,
        /// `f32[64]`
        pub bias2: Variable,
        /// `f32[256, 10]`
        pub dense: Variable,
        /// `f32[10]`
        pub bias3: Variable,
        precision: Precision,
    }

    impl Cnn {
        /// Fresh weights from `seed` (He initialization), made on the cpu and
        /// moved to `backend`, so every backend starts from the same ones.
        ///
        /// ```
        /// let m = opforge_examples::cnn::Cnn::new(7, opforge::BackendId::Cpu)?;
        /// assert_eq!(m.conv2.value().shape(), &[3, 3, 32, 64]);
        /// # Ok::<(), opforge::Error>(())
        /// ```
        pub fn new(seed: u64, backend: BackendId) -> opforge::Result<Cnn> {
            let var = |name: &str, t: Tensor| Ok::<_, opforge::Error>(Variable::named(name, t.to_backend(backend)?));
            let he = |fan_in: usize| (2.0 / fan_in as f32).sqrt();
            let [c1, c2] = CHANNELS;
            Ok(Cnn {
                conv1: var("conv1/kernel", Tensor::random_normal(&[3, 3, 1, c1], 0.0, he(9), seed)?)?,
                bias1: var("conv1/bias", Tensor::zeros(&[c1], DType::F32)?)?,
                conv2: var("conv2/kernel", Tensor::random_normal(&[3, 3, c1, c2], 0.0, he(9 * c1), seed + 1)?)?,
                bias2: var("conv2/bias", Tensor::zeros(&[c2], DType::F32)?)?,
                dense: var("dense/kernel", Tensor::random_normal(&[FEATURES, CLASSES], 0.0, he(FEATURES), seed + 2)?)?,
                bias3: var("dense/bias", Tensor::zeros(&[CLASSES], DType::F32)?)?,
                precision: Precision::default(),
            })
        }

        /// The same model computing in `dtype` (f16, bf16, f32 or f64) from
        /// its f32 weights: the forward pass casts the images and each
        /// weight where it reads them, and gives f32 logits; in f16 each
        /// training step runs under a loss scale ([`Precision`]).
        ///
        /// ```
        /// use opforge::DType;
        /// use opforge_examples::{cnn::Cnn, digits};
        /// let (train, _) = digits::load()?.split(0.9, 1);
        /// let m = Cnn::new(7, opforge::BackendId::Cpu)?.computing_in(DType::F16)?;
        /// let mut adam = opforge::train::Adam::new(0.003);
        /// let first = m.train_epoch(&train, &mut adam, 1)?;
        /// let second = m.train_epoch(&train, &mut adam, 2)?;
        /// assert!(second < first, "{second} after {first}");
        /// assert_eq!(m.conv1.value().dtype(), DType::F32, "master weights stay f32");
        /// assert!(m.precision().loss_scale().is_some_and(|s| s.skipped() < 5));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn computing_in(mut self, dtype: DType) -> opforge::Result<Cnn> {
            self.precision = Precision::new(dtype)?;
            Ok(self)
        }

        /// The dtype it computes in and its loss scale (f32 and none unless
        /// [`Cnn::computing_in`] said otherwise).
        ///
        /// ```
        /// let m = opforge_examples::cnn::Cnn::new(7, opforge::BackendId::Cpu)?;
        /// assert_eq!(m.precision().compute(), opforge::DType::F32);
        /// assert!(m.precision().loss_scale().is_none());
        /// # Ok::<(), opforge::Error>(())
        /// ```
        pub fn precision(&self) -> &Precision {
            &self.precision
        }

        /// The backend the parameters live on.
        ///
        /// ```
        /// let m = opforge_examples::cnn::Cnn::new(7, opforge::BackendId::Cpu)?;
        /// assert_eq!(m.backend(), opforge::BackendId::Cpu);
        /// # Ok::<(), opforge::Error>(())
        /// ```
        pub fn backend(&self) -> BackendId {
            self.conv1.value().backend()
        }

        /// The trainable variables.
        ///
        /// ```
        /// let m = opforge_examples::cnn::Cnn::new(7, opforge::BackendId::Cpu)?;
        /// assert_eq!(m.variables().len(), 6);
        /// # Ok::<(), opforge::Error>(())
        /// ```
        pub fn variables(&self) -> [&Variable; 6] {
            [&self.conv1, &self.bias1, &self.conv2, &self.bias2, &self.dense, &self.bias3]
        }

        /// Logits, `f32[n, 10]`, for images `f32[n, 64]` on the model's backend.
        ///
        /// ```
        /// use opforge::{BackendId, Tensor};
        /// let m = opforge_examples::cnn::Cnn::new(7, BackendId::Cpu)?;
        /// let logits = m.forward(&Tensor::zeros(&[3, 64], opforge::DType::F32)?)?;
        /// assert_eq!(logits.shape(), &[3, 10]);
        /// # Ok::<(), opforge::Error>(())
        /// ```
        pub fn forward(&self, x: &Tensor) -> opforge::Result<Tensor> {
            let n = x.shape()[0] as i64;
            let weight = |v: &Variable| self.precision.weight(v);
            let block = |x: &Tensor, filter: &Variable, bias: &Variable| {
                let y = ops::conv2d(x, &weight(filter)?, &[1, 1], Padding::Same, None, &[1, 1])?;
                let y = ops::relu(&ops::add(&y, &weight(bias)?)?)?;
                ops::max_pool(&y, &[2, 2], &[2, 2], Padding::Valid, None)
            };
            let x = self.precision.cast(ops::reshape(x, &[n, SIDE as i64, SIDE as i64, 1])?)?;
            let h = block(&block(&x, &self.conv1, &self.bias1)?, &self.conv2, &self.bias2)?;
            let h = ops::reshape(&h, &[n, FEATURES as i64])?;
            let (w, b) = (weight(&self.dense)?, weight(&self.bias3)?);
            self.precision.logits(ops::fused_matmul(&h, &w, Some(&b), None, false, false, Activation::Linear, 0.0)?)
        }

        /// Share of `data` whose most likely class is its label.
        ///
        /// ```
        /// let m = opforge_examples::cnn::Cnn::new(7, opforge::BackendId::Cpu)?;
        /// let accuracy = m.accuracy(&opforge_examples::digits::load()?)?;
        /// assert!((0.0..=1.0).contains(&accuracy));
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn accuracy(&self, data: &Digits) -> opforge::Result<f32> {
            crate::fit::accuracy(self.backend(), data, |x| self.forward(x))
        }

        /// Trains one epoch on `train`, in minibatches of [`BATCH`] in an
        /// order drawn from `seed`; returns the mean loss.
        ///
        /// ```
        /// use opforge_examples::{cnn::Cnn, digits};
        /// let (train, _) = digits::load()?.split(0.9, 1);
        /// let m = Cnn::new(7, opforge::BackendId::Cpu)?;
        /// let mut adam = opforge::train::Adam::new(0.003);
        /// let first = m.train_epoch(&train, &mut adam, 1)?;
        /// let second = m.train_epoch(&train, &mut adam, 2)?;
        /// assert!(second < first, "{second} after {first}");
        /// # Ok::<(), Box<dyn std::error::Error>>(())
        /// ```
        pub fn train_epoch(&self, train: &Digits, adam: &mut Adam, seed: u64) -> opforge::Result<f64> {
            // Each batch shifted its own way.
            let prepare = |x: Tensor, i: usize| shifted(&x, seed.wrapping_add(i as u64));
            let batches = crate::fit::Batches { size: BATCH, seed, prepare };
            crate::fit::train_epoch(self.backend(), train, adam, &self.precision, &self.variables(), batches, |x| {
                self.forward(x)
            })
        }
    }
}
