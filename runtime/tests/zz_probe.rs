use opforge::{ops, DType, Tensor};
#[test]
fn probe() {
    let a = Tensor::from_vec(vec![1.0f32; 6], &[2, 3]).unwrap();
    let b = Tensor::from_vec(vec![1.0f32; 4], &[4]).unwrap();
    let i = Tensor::from_vec(vec![1i32; 6], &[2, 3]).unwrap();
    let bo = Tensor::from_vec(vec![true; 6], &[2, 3]).unwrap();
    let r: Vec<(&str, opforge::Result<Tensor>)> = vec![
        ("add shape", ops::add(&a, &b)),
        ("sqrt i32", ops::sqrt(&i)),
        ("add mixed", ops::add(&a, &i)),
        ("sum bool", ops::sum(&bo, &[], false)),
        ("sum axis", ops::sum(&a, &[2], false)),
        ("sum axis neg", ops::sum(&a, &[-3], false)),
        ("softmax axis", ops::softmax(&a, 5)),
        ("softmax scalar", ops::softmax(&Tensor::scalar(1.0f32), -1)),
        ("repeat", ops::sum(&a, &[0, -2], false)),
        ("perm len", ops::transpose(&a, &[0])),
        ("perm rep", ops::transpose(&a, &[1, 1])),
        ("perm range", ops::transpose(&a, &[0, 2])),
        ("reshape", ops::reshape(&a, &[4, 2])),
        ("reshape2", ops::reshape(&a, &[-1, -1])),
        ("reshape neg", ops::reshape(&a, &[-2, 3])),
        ("matmul inner", ops::matmul(&a, &a, false, false)),
        ("matmul rank1", ops::matmul(&b, &a, false, false)),
        (
            "matmul batch",
            ops::matmul(
                &Tensor::zeros(&[2, 2, 3], DType::F32).unwrap(),
                &Tensor::zeros(&[3, 3, 2], DType::F32).unwrap(),
                false,
                false,
            ),
        ),
        ("ma", ops::moving_average(&a, &b, 0.5)),
    ];
    for (n, r) in r {
        println!("{n}: {}", r.map(|t| format!("{t:?}")).unwrap_or_else(|e| e.to_string()));
    }
    println!("{}", Tensor::from_vec(vec![1i32, 2], &[3]).unwrap_err());
    println!("{}", a.to_vec::<i32>().unwrap_err());
    println!("{}", Tensor::arange(0.0, 30.0, 1.0, DType::F32).unwrap());
    println!("{}", Tensor::arange(0.0, 24.0, 1.0, DType::I32).unwrap().reshape_probe());
}
trait P {
    fn reshape_probe(&self) -> Tensor;
}
impl P for Tensor {
    fn reshape_probe(&self) -> Tensor {
        ops::reshape(self, &[2, 3, 4]).unwrap()
    }
}
