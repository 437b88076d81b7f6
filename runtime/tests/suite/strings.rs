//! String tensors and TF.js's four string kernels on the cpu, checked
//! against TF.js's own tests (`tfjs-core/src/ops/string/*_test.ts`), and
//! the clean refusals around them.

use opforge::{ops, BackendId, DType, Error, Tensor};

fn strings(values: &[&str]) -> Tensor {
    Tensor::from_strings(values, &[values.len()]).unwrap()
}

fn scalar(value: &str) -> Tensor {
    Tensor::from_strings(&[value], &[]).unwrap()
}

fn i32s(values: &[i32]) -> Tensor {
    Tensor::from_vec(values.to_vec(), &[values.len()]).unwrap()
}

/// TF.js's `expectResult` for `stringSplit`: indices, tokens, dense shape.
#[track_caller]
fn split_is(input: &[&str], delimiter: &str, skip_empty: bool, indices: &[[i32; 2]], values: &[&str], shape: [i32; 2]) {
    let y = ops::string_split(&strings(input), &scalar(delimiter), skip_empty).unwrap();
    assert_eq!(y.indices.shape(), [indices.len(), 2]);
    assert_eq!(y.indices.to_vec::<i32>().unwrap(), indices.concat());
    assert_eq!((y.values.dtype(), y.values.shape()), (DType::String, &[values.len()][..]));
    assert_eq!(y.values.to_strings().unwrap(), values);
    assert_eq!((y.dense_shape.dtype(), y.dense_shape.to_vec::<i32>().unwrap()), (DType::I32, shape.to_vec()));
}

#[test]
fn string_split_as_tfjs() {
    let ix = |pairs: &[(i32, i32)]| pairs.iter().map(|&(a, b)| [a, b]).collect::<Vec<_>>();
    split_is(
        &["pigs on the wing", "animals"],
        " ",
        true,
        &ix(&[(0, 0), (0, 1), (0, 2), (0, 3), (1, 0)]),
        &["pigs", "on", "the", "wing", "animals"],
        [2, 4],
    );
    let chars = ix(&[(0, 0), (0, 1), (0, 2), (0, 3), (0, 4), (1, 0), (1, 1), (1, 2), (1, 3), (2, 0), (2, 1)]);
    split_is(
        &["hello", "hola", "hi"],
        "",
        true,
        &chars,
        &["h", "e", "l", "l", "o", "h", "o", "l", "a", "h", "i"],
        [3, 5],
    );
    let one_each = ix(&[(1, 0), (2, 0), (3, 0), (5, 0), (6, 0), (7, 0), (8, 0)]);
    let input = ["", " a", "b ", " c", " ", " d ", "  e", "f  ", "  g  ", "  "];
    split_is(&input, " ", true, &one_each, &["a", "b", "c", "d", "e", "f", "g"], [10, 1]);
    let input = ["", " a", "b ", " c", " ", " d ", ". e", "f .", " .g. ", " ."];
    split_is(&input, " .", true, &one_each, &["a", "b", "c", "d", "e", "f", "g"], [10, 1]);
    let input = ["hello|world", "hello world"];
    split_is(&input, "|", true, &ix(&[(0, 0), (0, 1), (1, 0)]), &["hello", "world", "hello world"], [2, 2]);
    split_is(&input, "| ", true, &ix(&[(0, 0), (0, 1), (1, 0), (1, 1)]), &["hello", "world", "hello", "world"], [2, 2]);
    let input = ["hello.cruel,world", "hello cruel world"];
    let values = ["hello", "cruel", "world", "hello cruel world"];
    split_is(&input, ".,", true, &ix(&[(0, 0), (0, 1), (0, 2), (1, 0)]), &values, [2, 3]);
    let input = ["#a", "b#", "#c#"];
    let all = ix(&[(0, 0), (0, 1), (1, 0), (1, 1), (2, 0), (2, 1), (2, 2)]);
    split_is(&input, "#", false, &all, &["", "a", "b", "", "", "c", ""], [3, 3]);
    split_is(&input, "#", true, &ix(&[(0, 0), (1, 0), (2, 0)]), &["a", "b", "c"], [3, 1]);
    // TF.js's "large input does not produce call stack overflow".
    let long = "a".repeat(200_000);
    let y = ops::string_split(&strings(&[&long]), &scalar(""), true).unwrap();
    assert_eq!((y.values.numel(), y.dense_shape.to_vec::<i32>().unwrap()), (200_000, vec![1, 200_000]));
    // No strings: no tokens, a [0, 0] dense shape.
    let y = ops::string_split(&Tensor::from_strings::<&str>(&[], &[0]).unwrap(), &scalar(" "), true).unwrap();
    assert_eq!((y.indices.shape(), y.dense_shape.to_vec::<i32>().unwrap()), (&[0, 2][..], vec![0, 0]));
}

/// TF.js's `expectResult` for `stringNGrams`.
#[track_caller]
#[allow(clippy::too_many_arguments)]
fn ngrams_are(
    data: &[&str],
    splits: &[i32],
    widths: &[i64],
    (left, right): (&str, &str),
    pad_width: i64,
    preserve_short: bool,
    grams: &[&str],
    gram_splits: &[i32],
) {
    let y =
        ops::string_ngrams(&strings(data), &i32s(splits), "|", widths, left, right, pad_width, preserve_short).unwrap();
    assert_eq!((y.ngrams.dtype(), y.ngrams.shape()), (DType::String, &[grams.len()][..]));
    assert_eq!(y.ngrams.to_strings().unwrap(), grams);
    assert_eq!(y.ngrams_splits.to_vec::<i32>().unwrap(), gram_splits);
}

#[test]
fn string_ngrams_as_tfjs() {
    let data = ["a", "b", "c", "d", "e", "f"];
    let (two, three) = ([0, 4, 6], [0, 1, 4, 6]);
    let pads = ("LP", "RP");
    let grams = ["LP|LP|a", "LP|a|b", "a|b|c", "b|c|d", "c|d|RP", "d|RP|RP", "LP|LP|e", "LP|e|f", "e|f|RP", "f|RP|RP"];
    ngrams_are(&data, &two, &[3], pads, -1, false, &grams, &[0, 6, 10]);
    let grams = [
        "LP|a", "a|b", "b|c", "c|d", "d|RP", "LP|LP|a", "LP|a|b", "a|b|c", "b|c|d", "c|d|RP", "d|RP|RP", "LP|e", "e|f",
        "f|RP", "LP|LP|e", "LP|e|f", "e|f|RP", "f|RP|RP",
    ];
    ngrams_are(&data, &two, &[2, 3], pads, -1, false, &grams, &[0, 11, 18]);
    let bigrams = ["LP|a", "a|b", "b|c", "c|d", "d|RP", "LP|e", "e|f", "f|RP"];
    ngrams_are(&data, &two, &[2], pads, -1, false, &bigrams, &[0, 5, 8]);
    // Padding is at most width - 1.
    ngrams_are(&data, &two, &[2], pads, 4, false, &bigrams, &[0, 5, 8]);
    let grams = ["a", "b", "c", "d", "LP|a", "a|b", "b|c", "c|d", "d|RP", "e", "f", "LP|e", "e|f", "f|RP"];
    ngrams_are(&data, &two, &[1, 2], pads, -1, false, &grams, &[0, 9, 14]);
    let grams = [
        "LP|LP|a", "LP|a|RP", "a|RP|RP", "LP|LP|b", "LP|b|c", "b|c|d", "c|d|RP", "d|RP|RP", "LP|LP|e", "LP|e|f",
        "e|f|RP", "f|RP|RP",
    ];
    ngrams_are(&data, &three, &[3], pads, -1, false, &grams, &[0, 3, 8, 12]);
    let grams = ["LP|LP|LP|LP|a", "LP|LP|LP|a|RP", "LP|LP|a|RP|RP", "LP|a|RP|RP|RP", "a|RP|RP|RP|RP"];
    ngrams_are(&["a"], &[0, 1], &[5], pads, -1, false, &grams, &[0, 5]);
    let none = ("", "");
    ngrams_are(&data, &two, &[3], none, 0, false, &["a|b|c", "b|c|d"], &[0, 2, 2]);
    ngrams_are(&data, &[0, 4, 4, 6], &[3], none, 0, false, &["a|b|c", "b|c|d"], &[0, 2, 2, 2]);
    ngrams_are(&data, &two, &[3], none, 0, true, &["a|b|c", "b|c|d", "e|f"], &[0, 2, 3]);
    ngrams_are(&data, &[0, 4, 4, 6], &[3], none, 0, true, &["a|b|c", "b|c|d", "e|f"], &[0, 2, 2, 3]);
    ngrams_are(&data, &two, &[4, 3], none, 0, true, &["a|b|c|d", "a|b|c", "b|c|d", "e|f"], &[0, 3, 4]);
    let grams = ["a|b", "b|c", "c|d", "a|b|c", "b|c|d", "e|f"];
    ngrams_are(&data, &two, &[2, 3], none, 0, false, &grams, &[0, 5, 6]);
    ngrams_are(&data, &two, &[2, 3], none, 0, true, &grams, &[0, 5, 6]);
    let grams = ["a|b|c", "b|c|d", "a|b", "b|c", "c|d", "e|f"];
    ngrams_are(&data, &two, &[3, 2], none, 0, true, &grams, &[0, 5, 6]);
    ngrams_are(&data, &two, &[2], none, 0, false, &["a|b", "b|c", "c|d", "e|f"], &[0, 3, 4]);
    ngrams_are(&data, &three, &[3], none, 0, false, &["b|c|d"], &[0, 0, 1, 1]);
    ngrams_are(&data, &three, &[5], none, 0, false, &[], &[0, 0, 0, 0]);
    let grams = ["LP|a|b", "a|b|c", "b|c|d", "c|d|RP", "LP|e|f", "e|f|RP"];
    ngrams_are(&data, &two, &[3], pads, 1, false, &grams, &[0, 4, 6]);
    ngrams_are(&data, &two, &[2], pads, 1, false, &bigrams, &[0, 5, 8]);
    let grams = ["LP|a", "a|b", "b|c", "c|d", "d|RP", "LP|a|b|c|d", "a|b|c|d|RP", "LP|e", "e|f", "f|RP"];
    ngrams_are(&data, &two, &[2, 5], pads, 1, false, &grams, &[0, 7, 10]);
    ngrams_are(&data, &two, &[5], pads, 1, true, &["LP|a|b|c|d", "a|b|c|d|RP", "LP|e|f|RP"], &[0, 2, 3]);
    let grams = ["LP|a|RP", "LP|b|c", "b|c|d", "c|d|RP", "LP|e|f", "e|f|RP"];
    ngrams_are(&data, &three, &[3], pads, 1, false, &grams, &[0, 1, 4, 6]);
    ngrams_are(&data, &three, &[5], pads, 1, false, &["LP|b|c|d|RP"], &[0, 0, 1, 1]);
    ngrams_are(&data, &two, &[1], pads, 1, false, &data, &[0, 4, 6]);
    ngrams_are(&[], &[], &[1], pads, 3, false, &[], &[]);
    let grams = ["L|L|R", "L|R|R", "L|L|a", "L|a|R", "a|R|R"];
    ngrams_are(&["a"], &[0, 0, 1], &[3], ("L", "R"), -1, false, &grams, &[0, 2, 5]);
    ngrams_are(&["a"], &[0, 0, 1], &[3], none, 0, false, &[], &[0, 0, 0]);
}

#[test]
fn string_ngrams_refuses_bad_splits_with_tfjs_messages() {
    let bad = |splits: &[i32]| {
        let e = ops::string_ngrams(&strings(&["a"]), &i32s(splits), "|", &[3], "", "", 0, false).unwrap_err();
        let text = e.to_string();
        assert!(text.contains("StringNGrams") && text.contains("cpu"), "{text}");
        text
    };
    assert!(bad(&[1, 1, 1]).contains("First split value must be 0, got 1"));
    assert!(bad(&[0, 1, 0]).contains("Invalid split value 0, must be in [1, 1]"));
    assert!(bad(&[0, 2]).contains("Invalid split value 2, must be in [0, 1]"));
    assert!(bad(&[0, 0]).contains("Last split value must be data size. Expected 1, got 0"));
    let e = ops::string_ngrams(&strings(&["a"]), &i32s(&[0, 1]), "|", &[0], "", "", 0, false).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("ngram_widths"), "{e}");
    // Widths and pads past what a machine holds are refused before
    // anything is made, not an abort: a width of 2^31 - 1 padded to match,
    // and a width of 2^30 with 2^63 - 1 pads asked (a pad width stops at
    // the n-gram's width less one).
    let huge = ops::string_ngrams(&strings(&["a"]), &i32s(&[0, 1]), "|", &[i32::MAX as i64], "L", "R", -1, false);
    let short = ops::string_ngrams(&strings(&["a"]), &i32s(&[0, 1]), "|", &[1 << 30], "L", "R", i64::MAX, true);
    for e in [huge.unwrap_err(), short.unwrap_err()] {
        assert!(matches!(e, Error::OutOfMemory { kernel: "StringNGrams", .. }), "{e}");
    }
    // No rows at all, with data: no n-grams (TF.js's empty ragged tensor).
    let y = ops::string_ngrams(&strings(&["a", "b"]), &i32s(&[]), "|", &[2], "", "", 0, false).unwrap();
    assert_eq!((y.ngrams.numel(), y.ngrams_splits.numel()), (0, 0));
}

#[test]
fn string_to_hash_bucket_fast_is_fingerprint64_as_tfjs() {
    let buckets = |x: &Tensor, n: i64| ops::string_to_hash_bucket_fast(x, n).unwrap();
    assert_eq!(buckets(&strings(&["a", "b", "c"]), 1).to_vec::<i32>().unwrap(), [0, 0, 0]);
    // fingerPrint64 of 'a'..'d': 12917804110809363939, 11795596070477164822,
    // 11430444447143000872, 4470636696479570465.
    assert_eq!(buckets(&strings(&["a", "b", "c", "d"]), 10).to_vec::<i32>().unwrap(), [9, 2, 2, 5]);
    let x = Tensor::from_strings(&["a", "b", "c", "d", "a", "b"], &[3, 2, 1]).unwrap();
    let y = buckets(&x, 10);
    assert_eq!((y.shape(), y.to_vec::<i32>().unwrap()), (&[3, 2, 1][..], vec![9, 2, 2, 5, 9, 2]));
    assert_eq!(buckets(&Tensor::from_strings::<&str>(&[], &[0]).unwrap(), 1 << 31).numel(), 0);
    for n in [-1, 0, (1 << 31) + 1] {
        let e = ops::string_to_hash_bucket_fast(&strings(&["a"]), n).unwrap_err();
        assert!(e.to_string().contains("range [1, 2147483648]"), "{e}");
    }
    // Past 64 bytes, and at 128 and 192, where the `farmhash` crate
    // hashes one round too many: fingerprints of TF.js's `hash_util.ts`
    // (byte i of the input is 7 i + 3), modulo 2^31.
    let bytes: Vec<u8> = (0..200u32).map(|i| (i * 7 + 3) as u8).collect();
    let lengths = [17, 33, 65, 127, 128, 129, 192, 200];
    let fingerprints: [u64; 8] = [
        14506534093795057959,
        14001582926318596329,
        8638051931306504420,
        14601120872369961854,
        7379187116787024497,
        10961879714037014659,
        4590343427702585127,
        7886090686657605591,
    ];
    let x = Tensor::from_strings(&lengths.map(|n| &bytes[..n]), &[8]).unwrap();
    let want: Vec<i32> = fingerprints.iter().map(|f| (f % (1 << 31)) as i32).collect();
    assert_eq!(buckets(&x, 1 << 31).to_vec::<i32>().unwrap(), want);
}

#[test]
fn static_regex_replace_as_tfjs() {
    let x = strings(&["this", "is", "a", "test test"]);
    let first = ops::static_regex_replace(&x, "test", "result", false).unwrap();
    assert_eq!(first.to_strings().unwrap(), ["this", "is", "a", "result test"]);
    let every = ops::static_regex_replace(&x, "test", "result", true).unwrap();
    assert_eq!(every.to_strings().unwrap(), ["this", "is", "a", "result result"]);
    // Groups, by number and by name; a shape kept.
    let x = Tensor::from_strings(&["aab", "b", "xaaabb"], &[3, 1]).unwrap();
    let y = ops::static_regex_replace(&x, "(?P<a>a+)(b*)", "$2${a}", true).unwrap();
    assert_eq!(
        (y.shape(), y.to_strings().unwrap()),
        (&[3, 1][..], vec!["baa".to_owned(), "b".into(), "xbbaaa".into()])
    );
    // Bytes that are not UTF-8 are matched as they are.
    let x = Tensor::from_strings(&[[0xff, b'a', 0xfe]], &[1]).unwrap();
    assert_eq!(
        ops::static_regex_replace(&x, "a", "bc", true).unwrap().to_byte_strings().unwrap(),
        [vec![0xff, b'b', b'c', 0xfe]]
    );
    let e = ops::static_regex_replace(&x, "(a", "b", true).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("pattern `(a`"), "{e}");
}

#[test]
fn string_tensors_print_quoted_reshape_and_stay_on_the_cpu() {
    let t = Tensor::from_strings(&["a", "bc", "", "d"], &[2, 2]).unwrap();
    // Each column padded to its widest value, quotes included, as TF.js does.
    assert_eq!(t.to_string(), "Tensor\n    [['a', 'bc'],\n     ['' , 'd' ]]");
    assert_eq!(t.backend(), BackendId::Cpu);
    let r = ops::reshape(&t, &[4]).unwrap();
    assert_eq!(
        (r.dtype(), r.to_strings().unwrap()),
        (DType::String, vec!["a".into(), "bc".into(), "".into(), "d".into()])
    );
    let e = ops::expand_dims(&r, 0).unwrap();
    assert_eq!(e.shape(), [1, 4]);
    assert_eq!(ops::identity(&e).unwrap().to_strings().unwrap().len(), 4);
}

#[test]
fn string_tensors_are_refused_cleanly_where_numbers_are_needed() {
    let t = strings(&["1", "2"]);
    // Kernels that do not list `string`.
    let e = ops::add(&t, &t).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("string"), "{e}");
    let e = ops::sum(&t, None, false).unwrap_err();
    assert!(e.to_string().contains("string") && e.to_string().contains("Sum"), "{e}");
    // Cast takes no string, and makes none (TF.js: "Only strings can be
    // casted to strings"; a string to a string is the string itself).
    let e = ops::cast(&t, DType::F32).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument { .. }) && e.to_string().contains("string"), "{e}");
    let text = ops::cast(&Tensor::scalar(1.0f32), DType::String).unwrap_err().to_string();
    assert!(text.contains("only a string casts to a string") && text.contains("Cast"), "{text}");
    // Reading numbers from strings, and strings from numbers.
    assert!(t.to_vec::<u8>().is_err() && Tensor::scalar(1i32).to_strings().is_err());
    let e = Tensor::from_strings(&[[0xffu8]], &[1]).unwrap().to_strings().unwrap_err();
    assert!(e.to_string().contains("not UTF-8"), "{e}");
    // No other backend holds strings.
    let e = t.to_backend(BackendId::Wgpu).unwrap_err();
    assert!(e.to_string().contains("string"), "{e}");
    // Checkpoints store numbers.
    let path = std::env::temp_dir().join(format!("opforge-strings-{}.safetensors", std::process::id()));
    let words = opforge::Variable::named("words", t.clone());
    let e = opforge::train::save_checkpoint(&path, &[&words], &opforge::train::Sgd::new(0.1)).unwrap_err();
    assert!(e.to_string().contains("safetensors stores numbers, not strings"), "{e}");
}

/// A string tensor's elements as `&str`s, and its shape.
fn words(t: &Tensor) -> (Vec<String>, Vec<usize>) {
    (t.to_strings().unwrap(), t.shape().to_vec())
}

fn grid(values: &[&str], shape: &[usize]) -> Tensor {
    Tensor::from_strings(values, shape).unwrap()
}

#[test]
fn strings_move_through_the_layout_kernels_as_tfjs_moves_them() {
    let owned = |v: &[&str], s: &[usize]| (v.iter().map(|w| w.to_string()).collect::<Vec<_>>(), s.to_vec());
    // [["a", "b", "c"], ["d", "e", "f"]], bytes and all.
    let x = grid(&["a", "bb", "", "d", "\u{e9}", "f g"], &[2, 3]);
    assert_eq!(words(&ops::transpose(&x, &[1, 0]).unwrap()), owned(&["a", "d", "bb", "\u{e9}", "", "f g"], &[3, 2]));
    assert_eq!(words(&ops::slice(&x, &[0, 1], &[2, 2]).unwrap()), owned(&["bb", "", "\u{e9}", "f g"], &[2, 2]));
    let every_other = ops::strided_slice(&x, &[0, 2], &[2, -4], &[1, -2], 0, 0, 0, 0, 0).unwrap();
    assert_eq!(words(&every_other), owned(&["", "a", "f g", "d"], &[2, 2]));
    let y = grid(&["x", "y", "z"], &[1, 3]);
    assert_eq!(
        words(&ops::concat(&[x.clone(), y.clone()], 0).unwrap()).0,
        ["a", "bb", "", "d", "\u{e9}", "f g", "x", "y", "z"]
    );
    let stacked = ops::stack(&[strings(&["a", "b"]), strings(&["c", "d"])], 1).unwrap();
    assert_eq!(words(&stacked), owned(&["a", "c", "b", "d"], &[2, 2]));
    let rows = ops::unstack(&x, 0).unwrap();
    assert_eq!(
        rows.iter().map(words).collect::<Vec<_>>(),
        [owned(&["a", "bb", ""], &[3]), owned(&["d", "\u{e9}", "f g"], &[3])]
    );
    let parts = ops::split(&x, &[1, 2], 1).unwrap();
    assert_eq!(words(&parts[0]), owned(&["a", "d"], &[2, 1]));
    assert_eq!(words(&parts[1]), owned(&["bb", "", "\u{e9}", "f g"], &[2, 2]));
    assert_eq!(words(&ops::tile(&strings(&["a", "b"]), &[2]).unwrap()).0, ["a", "b", "a", "b"]);
    assert_eq!(words(&ops::reverse(&x, &[1]).unwrap()).0, ["", "bb", "a", "f g", "\u{e9}", "d"]);
    let picked = ops::gather(&x, &i32s(&[2, 0, 2]), 1, 0).unwrap();
    assert_eq!(words(&picked), owned(&["", "a", "", "f g", "d", "f g"], &[2, 3]));
    assert_eq!(words(&ops::broadcast_to(&y, &[2, 3]).unwrap()).0, ["x", "y", "z", "x", "y", "z"]);
    // `select` picks by a mask, each side broadcast (TF.js's `where`).
    let mask = Tensor::from_vec(vec![true, false, true], &[3]).unwrap();
    assert_eq!(words(&ops::select(&mask, &x, &y).unwrap()), owned(&["a", "y", "", "d", "y", "f g"], &[2, 3]));
    let e = ops::select(&mask, &y, &Tensor::from_vec(vec![1.0f32; 3], &[1, 3]).unwrap()).unwrap_err().to_string();
    assert!(e.contains("Select") && e.contains("string") && e.contains("f32"), "{e}");
    // Empty tensors move as empty tensors.
    let none = grid(&[], &[0, 3]);
    assert_eq!(words(&ops::transpose(&none, &[1, 0]).unwrap()), (vec![], vec![3, 0]));
    assert_eq!(words(&ops::concat(&[none.clone(), y], 0).unwrap()).0, ["x", "y", "z"]);
}

#[test]
fn a_string_move_refuses_what_the_numbers_refuse() {
    let x = grid(&["a", "b", "c", "d"], &[2, 2]);
    // An index out of range: GatherV2's own message, naming the kernel.
    let e = ops::gather(&x, &i32s(&[2]), 0, 0).unwrap_err().to_string();
    assert!(e.contains("GatherV2") && e.contains("cpu"), "{e}");
    // Joining strings to numbers is a dtype error, not a move.
    let e = ops::concat(&[x.clone(), Tensor::from_vec(vec![1.0f32; 2], &[1, 2]).unwrap()], 0).unwrap_err();
    assert!(e.to_string().contains("string") && e.to_string().contains("Concat"), "{e}");
    // A permutation of the wrong rank: the shape rule's error, as for numbers.
    let e = ops::transpose(&x, &[0]).unwrap_err().to_string();
    assert!(e.contains("Transpose"), "{e}");
}

#[test]
fn unique_strings_as_tfjs() {
    // TF.js's `unique_test.ts`, "1d tensor with strings".
    let u = ops::unique(&strings(&["a", "b", "b", "c", "c"])).unwrap();
    assert_eq!(words(&u.values), (vec!["a".into(), "b".into(), "c".into()], vec![3]));
    assert_eq!((u.indices.dtype(), u.indices.to_vec::<i32>().unwrap()), (DType::I32, vec![0, 1, 1, 2, 2]));
    // Bytes decide: the empty string is a value, and a prefix is another.
    let u = ops::unique(&strings(&["", "ab", "a", "", "ab"])).unwrap();
    assert_eq!(words(&u.values).0, ["", "ab", "a"]);
    assert_eq!(u.indices.to_vec::<i32>().unwrap(), [0, 1, 2, 0, 1]);
    let u = ops::unique(&strings(&[])).unwrap();
    assert_eq!((u.values.numel(), u.indices.numel()), (0, 0));
}
