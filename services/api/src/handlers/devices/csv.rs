//! A CSV reader for device imports, after RFC 4180: fields separated by `,`, records by CRLF or
//! LF; a field in double quotes may hold commas, line breaks and doubled quotes (`""`). Each
//! record remembers the line it starts on, so that a refusal can name it. Blank lines are
//! passed over.

/// One record: the line it starts on (the first line is 1) and its fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Record {
    /// Line the record starts on.
    pub line: usize,
    /// The fields, unquoted.
    pub fields: Vec<String>,
}

/// Text that is not CSV: where, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotCsv {
    /// Line of the fault.
    pub line: usize,
    /// What is wrong.
    pub message: &'static str,
}

impl std::fmt::Display for NotCsv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "line {}: {}", self.line, self.message)
    }
}

/// The records of `text` (a leading byte-order mark is passed over).
pub fn records(text: &str) -> Result<Vec<Record>, NotCsv> {
    let mut chars = text.strip_prefix('\u{feff}').unwrap_or(text).chars().peekable();
    let mut out = Vec::new();
    let mut line = 1;
    while chars.peek().is_some() {
        let start = line;
        let mut fields = Vec::new();
        let mut quoted_any = false;
        // One field per turn, until the record's line break or the end of the text.
        loop {
            let mut field = String::new();
            if chars.peek() == Some(&'"') {
                quoted_any = true;
                chars.next();
                let opened = line;
                loop {
                    match chars.next() {
                        None => return Err(NotCsv { line: opened, message: "a quoted field is not closed" }),
                        Some('"') if chars.peek() == Some(&'"') => {
                            chars.next();
                            field.push('"');
                        }
                        Some('"') => break,
                        Some(c) => {
                            if c == '\n' {
                                line += 1;
                            }
                            field.push(c);
                        }
                    }
                }
                match chars.peek().copied() {
                    None | Some(',' | '\n') => {}
                    Some('\r') if text_ends_line(&chars) => {}
                    Some(_) => return Err(NotCsv { line, message: "text follows a closing quote" }),
                }
            } else {
                while let Some(&c) = chars.peek() {
                    match c {
                        ',' | '\n' => break,
                        '\r' if text_ends_line(&chars) => break,
                        '"' => {
                            return Err(NotCsv {
                                line,
                                message: "a quote inside an unquoted field (quote the field and double the quote)",
                            });
                        }
                        _ => {
                            field.push(c);
                            chars.next();
                        }
                    }
                }
            }
            fields.push(field);
            match chars.next() {
                Some(',') => continue,
                Some('\r') => {
                    // A CR ends a record only before an LF, which goes with it.
                    chars.next();
                    line += 1;
                    break;
                }
                Some('\n') => {
                    line += 1;
                    break;
                }
                _ => break,
            }
        }
        let blank = !quoted_any && fields.len() == 1 && fields[0].trim().is_empty();
        if !blank {
            out.push(Record { line: start, fields });
        }
    }
    Ok(out)
}

/// Whether the CR the iterator is at is followed by an LF (a CRLF line end).
fn text_ends_line(chars: &std::iter::Peekable<std::str::Chars<'_>>) -> bool {
    let mut ahead = chars.clone();
    ahead.next();
    ahead.next() == Some('\n')
}

#[cfg(test)]
#[allow(clippy::unwrap_used)]
mod tests {
    use super::*;

    fn fields(text: &str) -> Vec<(usize, Vec<&'static str>)> {
        records(text)
            .unwrap()
            .into_iter()
            .map(|r| (r.line, r.fields.into_iter().map(|f| &*f.leak()).collect()))
            .collect()
    }

    #[test]
    fn records_split_on_commas_and_line_ends_of_either_kind() {
        assert_eq!(
            fields("MAC,Name\r\n00:00:00:00:00:01,Anna\n00:00:00:00:00:02,\n"),
            vec![(1, vec!["MAC", "Name"]), (2, vec!["00:00:00:00:00:01", "Anna"]), (3, vec!["00:00:00:00:00:02", ""])]
        );
        assert_eq!(fields("\u{feff}a,b"), vec![(1, vec!["a", "b"])]);
        assert_eq!(fields(""), Vec::<(usize, Vec<&str>)>::new());
    }

    #[test]
    fn quoted_fields_hold_commas_quotes_and_line_breaks_and_later_lines_count_them() {
        assert_eq!(
            fields("a,\"b, \"\"c\"\"\nd\"\n\ne,f\r\n"),
            vec![(1, vec!["a", "b, \"c\"\nd"]), (4, vec!["e", "f"])]
        );
        assert_eq!(fields("\"\""), vec![(1, vec![""])], "a quoted empty field is a record");
        assert_eq!(fields("a\rb,c"), vec![(1, vec!["a\rb", "c"])], "a lone CR is text");
    }

    #[test]
    fn broken_quoting_names_its_line() {
        assert_eq!(records("a\n\"b,c\nd").unwrap_err().to_string(), "line 2: a quoted field is not closed");
        assert_eq!(records("a\n\"b\"c").unwrap_err().to_string(), "line 2: text follows a closing quote");
        assert_eq!(records("\"b\"\rc").unwrap_err().to_string(), "line 1: text follows a closing quote");
        assert!(records("a\nb\"c").unwrap_err().to_string().starts_with("line 2: a quote inside an unquoted field"));
    }
}
