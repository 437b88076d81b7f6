//! The collectives' shape functions: each refuses a communicator that is
//! not open, so a bad `comm` is an `InvalidArgument` before any kernel
//! runs, and reads the ranks from it.

use opforge::shape::Shape;

use crate::comm::open;
use crate::{AllGatherAttrs, AllReduceAttrs, BroadcastAttrs, ReduceScatterAttrs};

/// `AllReduce`: `x`'s shape.
///
/// ```
/// use opforge_dist::shapes::all_reduce;
/// assert_eq!(all_reduce(&[2, 3], &Default::default()).unwrap().as_slice(), &[2, 3]);
/// let closed = opforge_dist::AllReduceAttrs { comm: 99, ..Default::default() };
/// assert!(all_reduce(&[2], &closed).unwrap_err().contains("communicator 99 is not open"));
/// ```
pub fn all_reduce(x: &[usize], attrs: &AllReduceAttrs) -> Result<Shape, String> {
    open(attrs.comm)?;
    Ok(Shape::from_slice(x))
}

/// `AllGather`: `x` with axis 0 times the ranks; an error for a scalar.
///
/// ```
/// use opforge_dist::{shapes::all_gather, Communicator};
/// let ranks = Communicator::world().size();
/// assert_eq!(all_gather(&[2, 3], &Default::default()).unwrap().as_slice(), &[2 * ranks, 3]);
/// assert!(all_gather(&[], &Default::default()).is_err());
/// ```
pub fn all_gather(x: &[usize], attrs: &AllGatherAttrs) -> Result<Shape, String> {
    let ranks = open(attrs.comm)?.size;
    let Some((&first, rest)) = x.split_first() else {
        return Err("x is a scalar: the ranks' tensors are joined along axis 0, which it does not have".into());
    };
    let first = first.checked_mul(ranks).ok_or_else(|| format!("axis 0 of x {x:?} times {ranks} ranks overflows"))?;
    Ok(std::iter::once(first).chain(rest.iter().copied()).collect())
}

/// `ReduceScatter`: `x` with axis 0 divided by the ranks; an error for a
/// scalar, or an axis 0 the ranks do not divide.
///
/// ```
/// use opforge_dist::{shapes::reduce_scatter, Communicator};
/// let ranks = Communicator::world().size();
/// assert_eq!(reduce_scatter(&[4 * ranks, 3], &Default::default()).unwrap().as_slice(), &[4, 3]);
/// assert!(reduce_scatter(&[], &Default::default()).is_err());
/// ```
pub fn reduce_scatter(x: &[usize], attrs: &ReduceScatterAttrs) -> Result<Shape, String> {
    let ranks = open(attrs.comm)?.size;
    let Some((&first, rest)) = x.split_first() else {
        return Err("x is a scalar: it is cut into the ranks' blocks along axis 0, which it does not have".into());
    };
    if first % ranks != 0 {
        return Err(format!("axis 0 of x {x:?} does not divide into {ranks} equal blocks, one per rank"));
    }
    Ok(std::iter::once(first / ranks).chain(rest.iter().copied()).collect())
}

/// `Broadcast`: `x`'s shape; an error for a `root` outside `0..ranks`.
///
/// ```
/// use opforge_dist::{shapes::broadcast, BroadcastAttrs, Communicator};
/// assert_eq!(broadcast(&[5], &Default::default()).unwrap().as_slice(), &[5]);
/// let past = BroadcastAttrs { root: Communicator::world().size() as i64, ..Default::default() };
/// assert!(broadcast(&[5], &past).unwrap_err().contains("root"));
/// ```
pub fn broadcast(x: &[usize], attrs: &BroadcastAttrs) -> Result<Shape, String> {
    let ranks = open(attrs.comm)?.size;
    if !(0..ranks as i64).contains(&attrs.root) {
        return Err(format!("root {} is not a rank of a communicator of {ranks}", attrs.root));
    }
    Ok(Shape::from_slice(x))
}
