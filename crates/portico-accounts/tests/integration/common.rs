//! The shared test kit (`portico-testkit`) as these tests use it: a [`Workspace`] serves its
//! config in this process ([`Workspace::serve`]) and makes its accounts in process
//! ([`Workspace::create_user`], [`Workspace::create_account`]).

#[allow(unused_imports)] // each test module takes what it needs
pub(crate) use portico_testkit::{Http, Reply, Server, Workspace, x_auth};
