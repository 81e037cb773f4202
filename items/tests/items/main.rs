//! statelog-items' integration tests: item readers and the result writer through the public
//! API, over a local root directory (`local`) and over S3 against moto's server on loopback
//! (`s3`).

mod common;
mod local;
mod s3;
