//! `shader!`, which every kernel family's file names: declared first in
//! `mod.rs`, so that it is in scope in the files after it.

/// A built-in shader: `shaders/common.wgsl` (the helpers every shader
/// shares; WGSL has no includes), then each library named after the
/// shader's name (`shader!("layout", "words", "halves")`: `shaders/words.wgsl`, `shaders/halves.wgsl`), then
/// `shaders/<name>.wgsl`.
macro_rules! shader {
    ($name:literal $(, $library:literal)*) => {
        $crate::backend::wgpu::Shader::new(
            $name,
            concat!(
                include_str!("shaders/common.wgsl"),
                $(include_str!(concat!("shaders/", $library, ".wgsl")),)*
                include_str!(concat!("shaders/", $name, ".wgsl"))
            ),
        )
    };
}
