//! NATS subject rules: validation of subjects, patterns and queue groups, and token matching.
//!
//! Both bus implementations validate with these functions before doing anything else, so an
//! invalid subject fails the same way whether the bus is NATS or in-process.

use crate::BusError;

/// Matches exactly one token.
const ONE: &str = "*";
/// Matches one or more trailing tokens.
const REST: &str = ">";

/// Checks a subject a message is published to: non-empty tokens, no whitespace, no wildcards.
pub(crate) fn validate_subject(subject: &str) -> Result<(), BusError> {
    check_framing(subject)?;
    if subject.contains(['*', '>']) {
        return Err(invalid(subject, "wildcards are not allowed in a publish subject"));
    }
    Ok(())
}

/// Checks a subscription pattern: like a subject, but `*` may stand for any whole token and
/// `>` for the whole rest of the subject.
pub(crate) fn validate_pattern(pattern: &str) -> Result<(), BusError> {
    check_framing(pattern)?;
    let mut tokens = pattern.split('.').peekable();
    while let Some(token) = tokens.next() {
        let is_last = tokens.peek().is_none();
        match token {
            ONE => {}
            REST if is_last => {}
            REST => return Err(invalid(pattern, "'>' must be the last token")),
            _ if token.contains(['*', '>']) => {
                return Err(invalid(pattern, "a wildcard must be a whole token"));
            }
            _ => {}
        }
    }
    Ok(())
}

/// Checks a queue group name: non-empty, no whitespace (it is a protocol token in NATS).
pub(crate) fn validate_queue_group(group: &str) -> Result<(), BusError> {
    if group.is_empty() || group.contains(char::is_whitespace) {
        return Err(BusError::InvalidQueueGroup(format!("{group:?}: must be non-empty and contain no whitespace")));
    }
    Ok(())
}

/// Rules shared by subjects and patterns.
fn check_framing(subject: &str) -> Result<(), BusError> {
    if subject.is_empty() {
        return Err(invalid(subject, "must not be empty"));
    }
    if subject.contains(char::is_whitespace) {
        return Err(invalid(subject, "must not contain whitespace"));
    }
    if subject.split('.').any(str::is_empty) {
        return Err(invalid(subject, "tokens between dots must not be empty"));
    }
    Ok(())
}

fn invalid(subject: &str, rule: &str) -> BusError {
    BusError::InvalidSubject(format!("{subject:?}: {rule}"))
}

/// Most tokens a subject is split into on the stack; longer subjects (far longer than any
/// zonecast uses) are split into a `Vec`.
const TOKENS: usize = 32;

/// Calls `f` with the tokens of `subject` (split at its dots), without allocating for subjects
/// of up to [`TOKENS`] tokens.
pub(crate) fn with_tokens<R>(subject: &str, f: impl FnOnce(&[&str]) -> R) -> R {
    let mut buffer = [""; TOKENS];
    let mut n = 0;
    for token in subject.split('.') {
        if n == TOKENS {
            return f(&subject.split('.').collect::<Vec<_>>());
        }
        buffer[n] = token;
        n += 1;
    }
    f(&buffer[..n])
}

/// One token of a compiled pattern.
#[derive(Clone, Debug, PartialEq, Eq)]
enum Token {
    Literal(String),
    One,
    Rest,
}

/// A validated subscription pattern, split into tokens once so matching allocates nothing.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Pattern {
    tokens: Vec<Token>,
}

impl Pattern {
    /// Validates and compiles `pattern`.
    pub(crate) fn parse(pattern: &str) -> Result<Self, BusError> {
        validate_pattern(pattern)?;
        let tokens = pattern
            .split('.')
            .map(|token| match token {
                ONE => Token::One,
                REST => Token::Rest,
                literal => Token::Literal(literal.to_owned()),
            })
            .collect();
        Ok(Self { tokens })
    }

    /// Whether a subject, already split at its dots, matches this pattern.
    pub(crate) fn matches(&self, subject: &[&str]) -> bool {
        let (fixed, long_enough) = match self.tokens.split_last() {
            Some((Token::Rest, fixed)) => (fixed, subject.len() > fixed.len()),
            _ => (&self.tokens[..], subject.len() == self.tokens.len()),
        };
        // Last token first: subscriptions mostly share their leading tokens (the prefix, the
        // kind) and differ in later ones (a partition), so a mismatch is usually found at once.
        long_enough
            && fixed.iter().zip(subject).rev().all(|(token, s)| match token {
                Token::Literal(literal) => literal == s,
                Token::One | Token::Rest => true,
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn matches(pattern: &str, subject: &str) -> bool {
        let tokens: Vec<&str> = subject.split('.').collect();
        Pattern::parse(pattern).expect("test patterns are valid").matches(&tokens)
    }

    #[test]
    fn a_literal_pattern_matches_only_the_same_subject() {
        assert!(matches("a.b.c", "a.b.c"));
        assert!(!matches("a.b.c", "a.b"));
        assert!(!matches("a.b.c", "a.b.c.d"));
        assert!(!matches("a.b.c", "a.b.x"));
        assert!(!matches("a.b", "a.bb"));
    }

    #[test]
    fn a_star_matches_exactly_one_token() {
        assert!(matches("a.*.c", "a.b.c"));
        assert!(matches("a.*", "a.00:AA:BB:CC:DD:EE"));
        assert!(matches("*", "a"));
        assert!(!matches("a.*", "a"));
        assert!(!matches("a.*", "a.b.c"));
        assert!(!matches("a.*.c", "a.b.d"));
    }

    #[test]
    fn a_greater_than_matches_one_or_more_trailing_tokens() {
        assert!(matches("a.>", "a.b"));
        assert!(matches("a.>", "a.b.c.d"));
        assert!(matches(">", "a"));
        assert!(matches("*.b.>", "x.b.c"));
        assert!(!matches("a.>", "a"));
        assert!(!matches("a.>", "b.c"));
        assert!(!matches("*.b.>", "x.c.d"));
    }

    #[test]
    fn publish_subjects_must_be_well_formed_and_free_of_wildcards() {
        assert!(validate_subject("zonecast.positions.3.00:AA:BB:CC:DD:EE").is_ok());
        assert!(validate_subject("a-b_c.d").is_ok());
        for bad in ["", ".", "a.", ".a", "a..b", "a b", "a\tb", "a\nb", "a.*", "a.>", "*", ">", "a*"] {
            assert!(matches!(validate_subject(bad), Err(BusError::InvalidSubject(_))), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn patterns_allow_wildcards_only_as_whole_tokens_and_greater_than_only_last() {
        for good in ["a", "a.*", "*.b", "a.>", ">", "*.*.>"] {
            assert!(validate_pattern(good).is_ok(), "{good:?} should be accepted");
        }
        for bad in ["", "a..b", "a.", "a b", "a.>.b", ">.a", "a*", "a.b>", "a.*b"] {
            assert!(matches!(validate_pattern(bad), Err(BusError::InvalidSubject(_))), "{bad:?} should be rejected");
        }
    }

    #[test]
    fn queue_groups_must_be_non_empty_without_whitespace() {
        assert!(validate_queue_group("forwarders").is_ok());
        for bad in ["", "a b", "a\n"] {
            assert!(matches!(validate_queue_group(bad), Err(BusError::InvalidQueueGroup(_))));
        }
    }

    #[test]
    fn error_messages_name_the_subject_and_the_rule() {
        let message = validate_subject("a..b").map_err(|err| err.to_string()).expect_err("empty token is invalid");
        assert!(message.contains("\"a..b\""), "{message}");
        assert!(message.contains("empty"), "{message}");
    }
}
