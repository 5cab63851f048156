//! The one `-f/--format` value of every subcommand: [`Format`] lists every format rpcbench
//! writes; each command states which it supports by the type it narrows to ([`CommandFormat`])
//! and refuses the others, naming `--format` and what that command writes, with exit status 2.

use std::ffi::OsStr;
use std::marker::PhantomData;

use clap::builder::{PossibleValue, TypedValueParser};
use clap::error::ErrorKind;
use clap::ValueEnum;

/// Every report format, whichever command writes it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum Format {
    /// A readable report.
    Text,
    /// JSON.
    Json,
    /// GitHub-flavoured Markdown.
    Markdown,
    /// One self-contained HTML page.
    Html,
    /// Comma-separated rows.
    Csv,
}

impl Format {
    /// How the format is spelled on the command line.
    pub fn name(self) -> &'static str {
        match self {
            Format::Text => "text",
            Format::Json => "json",
            Format::Markdown => "markdown",
            Format::Html => "html",
            Format::Csv => "csv",
        }
    }
}

/// The formats one command writes: a narrowing of [`Format`].
pub trait CommandFormat: Copy + Send + Sync + 'static {
    /// This command's format for `format`, or `None` when the command does not write it.
    fn from_format(format: Format) -> Option<Self>;
}

/// The value parser of a command's `-f/--format`: any spelling of [`Format`], narrowed to the
/// command's formats; `--help` lists only those.
#[derive(Debug)]
pub struct FormatParser<F>(PhantomData<F>);

impl<F> Clone for FormatParser<F> {
    fn clone(&self) -> Self {
        Self(PhantomData)
    }
}

impl<F: CommandFormat> FormatParser<F> {
    /// The parser; a refusal names the subcommand being parsed.
    pub fn new() -> Self {
        Self(PhantomData)
    }

    fn supported() -> impl Iterator<Item = Format> {
        Format::value_variants().iter().copied().filter(|format| F::from_format(*format).is_some())
    }
}

/// `a, b or c`.
fn list(names: &[&str]) -> String {
    match names {
        [] => String::new(),
        [only] => only.to_string(),
        [init @ .., last] => format!("{} or {last}", init.join(", ")),
    }
}

impl<F: CommandFormat> TypedValueParser for FormatParser<F> {
    type Value = F;

    fn parse_ref(
        &self,
        cmd: &clap::Command,
        _arg: Option<&clap::Arg>,
        value: &OsStr,
    ) -> Result<F, clap::Error> {
        let text = value.to_string_lossy();
        let parsed = Format::from_str(text.trim(), true).ok();
        parsed.and_then(F::from_format).ok_or_else(|| {
            let names: Vec<&str> = Self::supported().map(Format::name).collect();
            let what = match parsed {
                Some(format) => format!("`{}` does not write {}", cmd.get_name(), format.name()),
                None => format!("'{text}' is not a format"),
            };
            let message = format!(
                "invalid value '{text}' for '--format <FORMAT>': {what}; `{}` writes {}\n",
                cmd.get_name(),
                list(&names)
            );
            clap::Error::raw(ErrorKind::InvalidValue, message).with_cmd(cmd)
        })
    }

    fn possible_values(&self) -> Option<Box<dyn Iterator<Item = PossibleValue> + '_>> {
        Some(Box::new(Self::supported().filter_map(|format| format.to_possible_value())))
    }
}

/// Implements [`CommandFormat`] for a command's enum whose variants carry the names of
/// [`Format`]'s.
macro_rules! command_format {
    ($name:ty: $($variant:ident),+) => {
        impl $crate::args::format::CommandFormat for $name {
            fn from_format(format: $crate::args::format::Format) -> Option<Self> {
                match format {
                    $($crate::args::format::Format::$variant => Some(<$name>::$variant),)+
                    #[allow(unreachable_patterns)]
                    _ => None,
                }
            }
        }
    };
}
pub(crate) use command_format;

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Debug, Clone, Copy, PartialEq, Eq)]
    enum Two {
        Text,
        Json,
    }
    command_format!(Two: Text, Json);

    fn parse(text: &str) -> Result<Two, String> {
        let cmd = clap::Command::new("two");
        FormatParser::<Two>::new().parse_ref(&cmd, None, OsStr::new(text)).map_err(|err| err.to_string())
    }

    #[test]
    fn a_command_takes_its_formats_in_any_case_and_refuses_the_others_listing_its_own() {
        assert_eq!(parse("json"), Ok(Two::Json));
        assert_eq!(parse("TEXT"), Ok(Two::Text));
        let err = parse("csv").unwrap_err();
        assert!(
            err.contains("--format") && err.contains("`two` does not write csv; `two` writes text or json"),
            "{err}"
        );
        let err = parse("yaml").unwrap_err();
        assert!(err.contains("'yaml' is not a format; `two` writes text or json"), "{err}");
    }
}
