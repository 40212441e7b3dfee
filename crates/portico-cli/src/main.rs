//! The `portico` binary: parses its arguments and calls `portico_cli`. No behaviour lives here.

mod allocator;

use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, Parser, Subcommand};
use portico_cli::{
    backup, check, database, import, indexes, keys, openapi, routes, serve, types, users,
};

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
        /// Address to listen on (default: PORTICO_LISTEN, else 0.0.0.0:$PORT when PORT is set,
        /// else `listen` in the config, else 127.0.0.1:3000; port 0 picks a free port).
        #[arg(long, value_name = "ADDR")]
        listen: Option<String>,
        /// Store URL: memory:, sqlite:PATH (default: PORTICO_DATABASE, else `database` in the
        /// config, else sqlite:./portico.db).
        #[arg(long, value_name = "URL")]
        database: Option<String>,
        /// Reload the `[scripts]` files when they change (calls in flight finish on the old
        /// code; an edit that does not load leaves the old code serving).
        #[arg(long)]
        watch: bool,
    },
    /// Manage user accounts.
    Users {
        #[command(subcommand)]
        command: UsersCommand,
    },
    /// Manage API keys (each acts as its own service account).
    Keys {
        #[command(subcommand)]
        command: KeysCommand,
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
    /// Print types: by default the TypeScript declarations of the `"portico"` module that
    /// scripts import (save them as portico.d.ts beside the scripts); with `--client`, a
    /// `.d.ts` typing the app's documents, methods, publications and routes for the
    /// TypeScript client; with `--python`, a module of `TypedDict`s for the Python client.
    Types {
        /// Types of the app for the TypeScript client (`portico-client`).
        #[arg(long, conflicts_with = "python")]
        client: bool,
        /// Types of the app for the Python client (`portico_client`).
        #[arg(long)]
        python: bool,
        /// Config file (default: ./portico.toml when it exists).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Store URL whose collections the zero-config default serves (no config file only).
        #[arg(long, value_name = "URL")]
        database: Option<String>,
    },
    /// Print the OpenAPI 3.1 document `serve` answers at /openapi.json.
    Openapi {
        /// Config file (default: ./portico.toml when it exists).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Store URL whose collections the zero-config default serves (no config file only).
        #[arg(long, value_name = "URL")]
        database: Option<String>,
    },
    /// Copy a SQLite database while it serves: checked, then renamed into place.
    Backup {
        #[command(flatten)]
        db: DatabaseArgs,
        /// Where to write it (default: in `[backups] dir` or its bucket, else
        /// ./portico-backup-<UTC time>.db).
        #[arg(long, value_name = "FILE")]
        out: Option<PathBuf>,
    },
    /// Replace a SQLite database with a backup (refused while a server has it open).
    Restore {
        /// The backup file, or a backup in a bucket (s3://bucket/prefix/NAME).
        file: PathBuf,
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// List the sorted indexes of the database, or drop one the config no longer declares.
    Indexes {
        #[command(subcommand)]
        command: IndexesCommand,
    },
    /// Validate the config; print every mistake with its line and key.
    Check {
        /// Config file (default: ./portico.toml).
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
        /// Store URL to check instead of the config's `database`.
        #[arg(long, value_name = "URL")]
        database: Option<String>,
    },
}

#[derive(Debug, Args)]
struct DatabaseArgs {
    /// Store URL (default: PORTICO_DATABASE, else `database` in the config, else
    /// sqlite:./portico.db).
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
enum KeysCommand {
    /// Make a key and print it (it is stored hashed: this is the only time it is shown).
    Add {
        #[command(flatten)]
        db: DatabaseArgs,
        /// The key's name (letters, digits, -, _ and .).
        #[arg(long)]
        name: String,
        /// A role of its service account; repeat for more.
        #[arg(long = "role", value_name = "ROLE")]
        roles: Vec<String>,
        /// Stop working after this long: 90d, 12h, 30m, 45s (default: never).
        #[arg(long, value_name = "LIFETIME")]
        expires: Option<String>,
    },
    /// List the keys: name, roles, creation, expiry, last use (never the key).
    List {
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Revoke a key: it stops working at the next request, on every instance.
    Revoke {
        #[command(flatten)]
        db: DatabaseArgs,
        /// The key's name.
        name: String,
    },
}

#[derive(Debug, Subcommand)]
enum IndexesCommand {
    /// Print every sorted index: collection, fields, and whether the config declares it.
    List {
        #[command(flatten)]
        db: DatabaseArgs,
    },
    /// Drop a sorted index (`portico indexes drop --collection tasks 'ownerId,-createdAt'`).
    Drop {
        #[command(flatten)]
        db: DatabaseArgs,
        /// The collection.
        #[arg(long, value_name = "NAME")]
        collection: String,
        /// The index's fields as `list` prints them (`ownerId,-createdAt`).
        index: String,
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

/// `portico types` without `--client` or `--python`: the declarations of the scripts'
/// `"portico"` module.
#[cfg(feature = "scripts")]
#[allow(clippy::unnecessary_wraps)] // the same signature as its twin of builds without scripts
fn script_types() -> portico_cli::Result<()> {
    say(portico_script::TYPES.trim_end());
    Ok(())
}

/// `portico types` without `--client` or `--python` in a build without scripts: refused, as
/// there is no scripts' module to declare.
#[cfg(not(feature = "scripts"))]
fn script_types() -> portico_cli::Result<()> {
    Err(portico_cli::Error::Script(format!(
        "portico types: {}",
        portico_cli::scripts::NOT_BUILT
    )))
}

/// `portico types`: the scripts' module by default, else the app's types for a client.
async fn print_types(
    client: bool,
    python: bool,
    config: Option<PathBuf>,
    database: Option<String>,
) -> portico_cli::Result<()> {
    if !client && !python {
        return script_types();
    }
    let source = config.as_ref().map_or_else(
        || "portico.toml".to_owned(),
        |path| path.display().to_string(),
    );
    let shape = types::run(config, database).await?;
    if python {
        say(types::python(&shape, &source).trim_end());
    } else {
        say(types::typescript(&shape, &source).trim_end());
    }
    Ok(())
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if !matches!(cli.command, Command::Serve { .. }) {
        // What the store warns about while a one-shot command runs (a database migrated to
        // this build's stored format, with where its backup went) reaches the operator.
        let filter = tracing_subscriber::EnvFilter::try_from_default_env()
            .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new("warn"));
        let _ = tracing_subscriber::fmt()
            .with_env_filter(filter)
            .with_target(false)
            .without_time()
            .with_ansi(false)
            .with_writer(std::io::stderr)
            .try_init();
    }
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

/// Opens the store a command uses, after saying which one on standard error.
async fn open(
    db: &DatabaseArgs,
    effect: database::Effect,
) -> portico_cli::Result<portico_platform::Platform> {
    let (path, config) = database::load_config(db.config.as_deref())?;
    let choice = database::choose_database(db.database.as_deref(), path.as_deref(), &config);
    database::check_lasting(&choice, effect)?;
    eprintln!("database: {choice}");
    database::open(&choice.url).await
}

async fn run(command: Command) -> portico_cli::Result<()> {
    match command {
        Command::Serve {
            config,
            listen,
            database,
            watch,
        } => {
            let log = serve::init_logging(serve::log_format(config.as_deref()));
            allocator::init();
            let mut options = serve::ServeOptions::new().watch(watch);
            options.config = config;
            options.listen = listen;
            options.database = database;
            let served = serve::run(options).await;
            // Every buffered log line is written before the process goes on to exit.
            drop(log);
            served
        }
        Command::Users { command } => run_users(command).await,
        Command::Keys { command } => run_keys(command).await,
        Command::Indexes { command } => run_indexes(command).await,
        Command::Backup { db, out } => {
            let (path, config) = database::load_config(db.config.as_deref())?;
            let choice =
                database::choose_database(db.database.as_deref(), path.as_deref(), &config);
            eprintln!("database: {choice}");
            let report = backup::backup(&choice, out, &config).await?;
            say(backup::backup_line(&report));
            Ok(())
        }
        Command::Restore { file, db } => {
            let (path, config) = database::load_config(db.config.as_deref())?;
            let choice =
                database::choose_database(db.database.as_deref(), path.as_deref(), &config);
            eprintln!("database: {choice}");
            let report = backup::restore(&file, &choice, &config).await?;
            say(backup::restore_lines(&file, &report));
            Ok(())
        }
        Command::Import {
            db,
            collection,
            file,
        } => {
            let platform = open(&db, database::Effect::Creates).await?;
            let count = import::import_file(&platform, &collection, &file).await?;
            say(format_args!(
                "imported {count} document{} into {collection}",
                if count == 1 { "" } else { "s" }
            ));
            Ok(())
        }
        Command::Routes { config } => {
            let (path, config) = database::load_config(config.as_deref())?;
            if path.is_none() {
                say(format_args!(
                    "no config file (no ./portico.toml, no --config): nothing is configured.\n`portico serve` here serves the zero-config default: every collection of the database read-only at /{api}<name> and /{api}<name>/:id for logged-in users, POST /{api}login, POST|GET /{api}logout.",
                    api = serve::ZERO_CONFIG_API_PATH
                ));
                return Ok(());
            }
            let served = routes::served_routes(&config, path.as_deref()).await?;
            say(routes::format_table(&served).trim_end());
            Ok(())
        }
        Command::Types {
            client,
            python,
            config,
            database,
        } => print_types(client, python, config, database).await,
        Command::Openapi { config, database } => {
            let document = openapi::run(config, database).await?;
            let text = serde_json::to_string_pretty(&document)
                .map_err(|e| portico_cli::Error::Setup(format!("the OpenAPI document: {e}")))?;
            say(text);
            Ok(())
        }
        Command::Check { config, database } => {
            let path = database::config_path(config.as_deref())
                .unwrap_or_else(|| PathBuf::from(portico_cli::config::DEFAULT_CONFIG_FILE));
            let report = check::check(&path, database.as_deref()).await?;
            for warning in &report.warnings {
                eprintln!("{warning}");
            }
            say(report.summary);
            Ok(())
        }
    }
}

async fn run_indexes(command: IndexesCommand) -> portico_cli::Result<()> {
    match command {
        IndexesCommand::List { db } => {
            let (_, config) = database::load_config(db.config.as_deref())?;
            let platform = open(&db, database::Effect::Reads).await?;
            let all = indexes::in_database(&platform).await?;
            if all.is_empty() {
                say("no sorted indexes");
            }
            for (collection, spec) in all {
                let declared = config
                    .indexes
                    .get(&collection)
                    .is_some_and(|specs| specs.iter().any(|s| s.fields == spec.fields));
                say(format_args!(
                    "{collection}\t{}{}\t{}",
                    spec.fields_name(),
                    if spec.unique { " unique" } else { "" },
                    if declared {
                        "declared"
                    } else {
                        "not in the config"
                    }
                ));
            }
            Ok(())
        }
        IndexesCommand::Drop {
            db,
            collection,
            index,
        } => {
            let platform = open(&db, database::Effect::Changes).await?;
            if indexes::drop(&platform, &collection, &index).await? {
                say(format_args!("dropped the index {index} of {collection}"));
            } else {
                say(format_args!("{collection} has no index {index}"));
            }
            Ok(())
        }
    }
}

async fn run_keys(command: KeysCommand) -> portico_cli::Result<()> {
    match command {
        KeysCommand::Add {
            db,
            name,
            roles,
            expires,
        } => {
            let platform = open(&db, database::Effect::Creates).await?;
            let key = keys::add(&platform, &name, roles, expires.as_deref()).await?;
            say(format_args!("{key}"));
        }
        KeysCommand::List { db } => {
            let platform = open(&db, database::Effect::Reads).await?;
            for key in platform.accounts().list_api_keys().await? {
                say(format_args!("{}", keys::summary(&key)));
            }
        }
        KeysCommand::Revoke { db, name } => {
            let platform = open(&db, database::Effect::Changes).await?;
            if !platform.accounts().revoke_api_key(&name).await? {
                return Err(portico_cli::Error::Usage(format!(
                    "no key is named {name:?}"
                )));
            }
            say(format_args!("revoked {name}"));
        }
    }
    Ok(())
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
            let platform = open(&db, database::Effect::Creates).await?;
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
            let platform = open(&db, database::Effect::Reads).await?;
            for user in users::list(&platform).await? {
                say(format_args!("{}", users::summary(&user)));
            }
        }
        UsersCommand::Roles { command } => match command {
            RolesCommand::Add { db, user, roles } => {
                let platform = open(&db, database::Effect::Changes).await?;
                let id = users::add_roles(&platform, &user, &roles).await?;
                say(format_args!("{id}: added {}", roles.join(", ")));
            }
            RolesCommand::Remove { db, user, roles } => {
                let platform = open(&db, database::Effect::Changes).await?;
                let id = users::remove_roles(&platform, &user, &roles).await?;
                say(format_args!("{id}: removed {}", roles.join(", ")));
            }
        },
        UsersCommand::Password { db, user, password } => {
            let platform = open(&db, database::Effect::Changes).await?;
            let id = users::set_password(&platform, &user, password).await?;
            say(format_args!("{id}: password set"));
        }
        UsersCommand::Logout { db, user } => {
            let platform = open(&db, database::Effect::Changes).await?;
            let (id, removed) = users::logout(&platform, &user).await?;
            say(format_args!(
                "{id}: {removed} login token{} removed",
                if removed == 1 { "" } else { "s" }
            ));
        }
        UsersCommand::Remove { db, user } => {
            let platform = open(&db, database::Effect::Changes).await?;
            let id = users::remove(&platform, &user).await?;
            say(format_args!("removed {id}"));
        }
    }
    Ok(())
}
