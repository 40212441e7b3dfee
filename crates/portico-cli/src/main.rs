//! The `portico` binary: parses its arguments and calls `portico_cli`. No behaviour lives here.

mod allocator;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use portico_cli::{check, database, import, routes, serve, users};

/// A zero-code REST server from a TOML file, on embedded SQLite.
#[derive(Debug, Parser)]
#[command(name = "portico", version, about)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Debug, Subcommand)]
enum Command {
    /// Serve the APIs the config declares.
    Serve {
        /// Config file (default: ./portico.toml when it exists).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Address to listen on (default: `listen` in the config, else 127.0.0.1:3000; port 0
        /// picks a free port).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// Store URL: memory:, sqlite:PATH (default: `database` in the config, else
        /// sqlite:./portico.db).
        #[arg(long, value_name = "URL")]
        database: Option<String>,
    },
    /// Manage user accounts.
    Users {
        #[command(subcommand)]
        command: UsersCommand,
    },
    /// Import a JSON array export (one document per element) into a collection.
    Import {
        #[command(flatten)]
        db: DatabaseArgs,
        /// The collection to import into (`users` keeps passwords and tokens working).
        #[arg(long, value_name = "NAME")]
        collection: String,
        /// The JSON file.
        file: PathBuf,
    },
    /// Print every route the config serves (method, path, access, source).
    Routes {
        /// Config file (default: ./portico.toml when it exists).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Validate the config; print every mistake with its line and key.
    Check {
        /// Config file (default: ./portico.toml).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
}

#[derive(Debug, Args)]
struct DatabaseArgs {
    /// Store URL (default: `database` in the config, else sqlite:./portico.db).
    #[arg(long, value_name = "URL")]
    database: Option<String>,
    /// Config file whose `database` to use (default: ./portico.toml when it exists).
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
}

#[derive(Debug, Subcommand)]
enum UsersCommand {
    /// Create an account and print its id.
    Add {
        #[command(flatten)]
        db: DatabaseArgs,
        /// The password (stored hashed).
        #[arg(long)]
        password: String,
        /// Username (a username or an email is required).
        #[arg(long)]
        username: Option<String>,
        /// Email address.
        #[arg(long)]
        email: Option<String>,
        /// A role; repeat for more.
        #[arg(long = "role", value_name = "ROLE")]
        roles: Vec<String>,
    },
    /// List every account (id, username, emails, roles, token count).
    List {
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Add or remove roles.
    Roles {
        #[command(subcommand)]
        command: RolesCommand,
    },
    /// Set an account's password.
    Password {
        #[command(flatten)]
        db: DatabaseArgs,
        /// Id, username or email.
        user: String,
        /// The new password (stored hashed).
        #[arg(long)]
        password: String,
    },
    /// End every session of an account (its login tokens stop working at once).
    Logout {
        #[command(flatten)]
        db: DatabaseArgs,
        /// Id, username or email.
        user: String,
    },
    /// Remove an account.
    Remove {
        #[command(flatten)]
        db: DatabaseArgs,
        /// Id, username or email.
        user: String,
    },
}

#[derive(Debug, Subcommand)]
enum RolesCommand {
    /// Give roles to an account.
    Add {
        #[command(flatten)]
        db: DatabaseArgs,
        /// Id, username or email.
        user: String,
        /// The roles.
        #[arg(required = true)]
        roles: Vec<String>,
    },
    /// Take roles from an account.
    Remove {
        #[command(flatten)]
        db: DatabaseArgs,
        /// Id, username or email.
        user: String,
        /// The roles.
        #[arg(required = true)]
        roles: Vec<String>,
    },
}

/// Prints a line on standard output. A closed stdout (`portico routes | head -1`) is not an error
/// worth a panic.
fn say(text: impl std::fmt::Display) {
    use std::io::Write as _;
    let _ = writeln!(std::io::stdout().lock(), "{text}");
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    let runtime = match tokio::runtime::Runtime::new() {
        Ok(runtime) => runtime,
        Err(err) => {
            eprintln!("error: cannot start the async runtime: {err}");
            return ExitCode::FAILURE;
        }
    };
    match runtime.block_on(run(cli.command)) {
        Ok(()) => ExitCode::SUCCESS,
        Err(err) => {
            eprintln!("error: {err}");
            ExitCode::FAILURE
        }
    }
}

async fn open(db: &DatabaseArgs) -> portico_cli::Result<portico_platform::Platform> {
    let (_, config) = database::load_config(db.config.as_deref())?;
    database::open(&database::database_url(db.database.as_deref(), &config)).await
}

async fn run(command: Command) -> portico_cli::Result<()> {
    match command {
        Command::Serve {
            config,
            listen,
            database,
        } => {
            serve::init_logging();
            allocator::init();
            serve::run(serve::ServeOptions {
                config,
                listen,
                database,
            })
            .await
        }
        Command::Users { command } => run_users(command).await,
        Command::Import {
            db,
            collection,
            file,
        } => {
            let platform = open(&db).await?;
            let count = import::import_file(&platform, &collection, &file).await?;
            say(format_args!(
                "imported {count} document{} into {collection}",
                if count == 1 { "" } else { "s" }
            ));
            Ok(())
        }
        Command::Routes { config } => {
            let (_, config) = database::load_config(config.as_deref())?;
            say(routes::format_table(&routes::route_table(&config)).trim_end());
            Ok(())
        }
        Command::Check { config } => {
            let path = database::config_path(config.as_deref())
                .unwrap_or_else(|| PathBuf::from(portico_cli::config::DEFAULT_CONFIG_FILE));
            say(check::check(&path).await?);
            Ok(())
        }
    }
}

async fn run_users(command: UsersCommand) -> portico_cli::Result<()> {
    match command {
        UsersCommand::Add {
            db,
            password,
            username,
            email,
            roles,
        } => {
            let platform = open(&db).await?;
            let id = users::add(
                &platform,
                users::NewAccount {
                    username,
                    email,
                    password,
                    roles,
                },
            )
            .await?;
            say(format_args!("{id}"));
        }
        UsersCommand::List { db } => {
            let platform = open(&db).await?;
            for user in users::list(&platform).await? {
                say(format_args!("{}", users::summary(&user)));
            }
        }
        UsersCommand::Roles { command } => match command {
            RolesCommand::Add { db, user, roles } => {
                let platform = open(&db).await?;
                let id = users::add_roles(&platform, &user, &roles).await?;
                say(format_args!("{id}: added {}", roles.join(", ")));
            }
            RolesCommand::Remove { db, user, roles } => {
                let platform = open(&db).await?;
                let id = users::remove_roles(&platform, &user, &roles).await?;
                say(format_args!("{id}: removed {}", roles.join(", ")));
            }
        },
        UsersCommand::Password { db, user, password } => {
            let platform = open(&db).await?;
            let id = users::set_password(&platform, &user, password).await?;
            say(format_args!("{id}: password set"));
        }
        UsersCommand::Logout { db, user } => {
            let platform = open(&db).await?;
            let (id, removed) = users::logout(&platform, &user).await?;
            say(format_args!(
                "{id}: {removed} login token{} removed",
                if removed == 1 { "" } else { "s" }
            ));
        }
        UsersCommand::Remove { db, user } => {
            let platform = open(&db).await?;
            let id = users::remove(&platform, &user).await?;
            say(format_args!("removed {id}"));
        }
    }
    Ok(())
}
