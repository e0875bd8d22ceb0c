//! linkmodel
