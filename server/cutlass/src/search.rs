//! Ranked search: an identifier through the inverted index, a phrase
//! (case-insensitive, then all its words on one line), or `/regex/`.

use crate::index::{Index, Posting, SourceFile};
use crate::rank;
use crate::tokens::as_identifier;
use globset::{Glob, GlobMatcher};
use regex::{Regex, RegexBuilder};
use serde::Serialize;

/// Matching lines looked at per query before ranking; bounds a `/./` query.
const MAX_CANDIDATES: usize = 20_000;

#[derive(Debug, Clone, Copy)]
pub struct SearchLimits {
    /// Lines of context on each side of a hit.
    pub context_lines: usize,
    /// Longer context lines are cut (minified or generated code).
    pub max_line_chars: usize,
    /// Hits kept per file, so one file cannot fill the result.
    pub hits_per_file: usize,
}

impl Default for SearchLimits {
    fn default() -> Self {
        SearchLimits { context_lines: 3, max_line_chars: 200, hits_per_file: 3 }
    }
}

/// One matching line.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Hit {
    /// Relative to the tree's root, `/`-separated.
    pub path: String,
    /// 1-based.
    pub line: usize,
    /// 1-based line of the first line of `context`.
    pub context_start: usize,
    /// The hit's line with up to `context_lines` lines on each side.
    pub context: String,
    pub score: f32,
}

impl Hit {
    /// `path:line` followed by the context with line numbers, as a tool shows it.
    pub fn numbered(&self) -> String {
        let mut out = format!("{}:{}\n", self.path, self.line);
        for (i, text) in self.context.lines().enumerate() {
            let n = self.context_start + i;
            let mark = if n == self.line { '>' } else { ' ' };
            out.push_str(&format!("{mark}{n:>6}| {text}\n"));
        }
        out
    }
}

#[derive(Debug, thiserror::Error)]
pub enum SearchError {
    #[error("bad path glob `{0}`: {1}")]
    Glob(String, String),
    #[error("bad regex `{0}`: {1}")]
    Regex(String, String),
    #[error("empty query")]
    Empty,
}

/// Where the extra words of a phrase must occur.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Scope {
    Line,
    File,
}

struct Candidate {
    file: u32,
    line: u32,
    score: f32,
}

impl Index {
    /// The best `limit` hits for `query`, in files whose relative path matches
    /// `path_glob` (`include/cute/**`, or `*.hpp` and `cute/**` anywhere).
    pub fn search(&self, query: &str, path_glob: Option<&str>, limit: usize) -> Result<Vec<Hit>, SearchError> {
        let query = query.trim();
        if query.is_empty() {
            return Err(SearchError::Empty);
        }
        let filter = PathFilter::new(path_glob)?;
        let candidates = if let Some(pattern) = query.strip_prefix('/').and_then(|q| q.strip_suffix('/')) {
            let re = Regex::new(pattern).map_err(|e| SearchError::Regex(pattern.to_owned(), e.to_string()))?;
            self.scan(&filter, &re, &[], Scope::Line, None)
        } else if let Some(ident) = as_identifier(query).filter(|i| self.postings.contains_key(*i)) {
            self.identifier(&filter, ident)
        } else {
            self.phrase(&filter, query)
        };
        Ok(self.rank(candidates, limit))
    }

    fn identifier(&self, filter: &PathFilter, ident: &str) -> Vec<Candidate> {
        let postings: &[Posting] = self.postings.get(ident).map_or(&[], Vec::as_slice);
        postings
            .iter()
            .filter(|p| filter.accepts(&self.files[p.file as usize].path))
            .take(MAX_CANDIDATES)
            .map(|p| {
                let file = &self.files[p.file as usize];
                let score = rank::score(file.kind, file.line(p.line as usize), Some(ident));
                Candidate { file: p.file, line: p.line, score }
            })
            .collect()
    }

    /// The phrase as written (any case); failing that, lines holding all its
    /// words; failing that, lines holding its rarest word in files holding all.
    fn phrase(&self, filter: &PathFilter, query: &str) -> Vec<Candidate> {
        let found = self.scan(filter, &case_insensitive(query), &[], Scope::Line, as_identifier(query));
        let mut words: Vec<&str> = query.split_whitespace().collect();
        if !found.is_empty() || words.len() < 2 {
            return found;
        }
        let rarity = |w: &&str| self.postings.get(*w).map_or(usize::MAX, Vec::len);
        words.sort_by_key(rarity);
        let anchor = case_insensitive(words[0]);
        let others: Vec<Regex> = words[1..].iter().map(|w| case_insensitive(w)).collect();
        let on_one_line = self.scan(filter, &anchor, &others, Scope::Line, None);
        if !on_one_line.is_empty() {
            return on_one_line;
        }
        self.scan(filter, &anchor, &others, Scope::File, as_identifier(words[0]))
    }

    /// Lines matching `re` where every one of `also` matches within `scope`.
    fn scan(
        &self,
        filter: &PathFilter,
        re: &Regex,
        also: &[Regex],
        scope: Scope,
        ident: Option<&str>,
    ) -> Vec<Candidate> {
        let mut out = Vec::new();
        for (id, file) in self.files.iter().enumerate() {
            if !filter.accepts(&file.path) || also.iter().any(|r| !r.is_match(&file.text)) {
                continue;
            }
            let mut last_line = usize::MAX;
            for m in re.find_iter(&file.text) {
                let line = file.line_of(m.start());
                if line == last_line {
                    continue;
                }
                last_line = line;
                let text = file.line(line);
                if scope == Scope::File || also.iter().all(|r| r.is_match(text)) {
                    out.push(Candidate {
                        file: id as u32,
                        line: line as u32,
                        score: rank::score(file.kind, text, ident),
                    });
                    if out.len() >= MAX_CANDIDATES {
                        return out;
                    }
                }
            }
        }
        out
    }

    fn rank(&self, mut candidates: Vec<Candidate>, limit: usize) -> Vec<Hit> {
        candidates.sort_by(|a, b| {
            b.score
                .total_cmp(&a.score)
                .then_with(|| self.files[a.file as usize].path.cmp(&self.files[b.file as usize].path))
                .then(a.line.cmp(&b.line))
        });
        let mut per_file = std::collections::HashMap::<u32, usize>::new();
        candidates
            .into_iter()
            .filter(|c| {
                let n = per_file.entry(c.file).or_default();
                *n += 1;
                *n <= self.search_limits.hits_per_file
            })
            .take(limit)
            .map(|c| self.hit(&self.files[c.file as usize], c.line as usize, c.score))
            .collect()
    }

    fn hit(&self, file: &SourceFile, line: usize, score: f32) -> Hit {
        let limits = &self.search_limits;
        let first = line.saturating_sub(limits.context_lines);
        let last = (line + limits.context_lines).min(file.line_count() - 1);
        let mut context = String::new();
        for i in first..=last {
            let text = file.line(i);
            let cut = text.char_indices().nth(limits.max_line_chars).map_or(text, |(at, _)| &text[..at]);
            context.push_str(cut);
            context.push('\n');
        }
        Hit { path: file.path.clone(), line: line + 1, context_start: first + 1, context, score }
    }
}

fn case_insensitive(text: &str) -> Regex {
    RegexBuilder::new(&regex::escape(text)).case_insensitive(true).build().expect("an escaped literal is a valid regex")
}

/// A path glob matched against the whole relative path, or against any tail
/// of it (so `cute/**` finds `include/cute/...`).
struct PathFilter(Option<(GlobMatcher, GlobMatcher)>);

impl PathFilter {
    fn new(glob: Option<&str>) -> Result<PathFilter, SearchError> {
        let Some(glob) = glob.map(str::trim).filter(|g| !g.is_empty()) else {
            return Ok(PathFilter(None));
        };
        let compile = |g: &str| {
            Glob::new(g).map(|g| g.compile_matcher()).map_err(|e| SearchError::Glob(glob.to_owned(), e.to_string()))
        };
        Ok(PathFilter(Some((compile(glob)?, compile(&format!("**/{glob}"))?))))
    }

    fn accepts(&self, path: &str) -> bool {
        self.0.as_ref().is_none_or(|(whole, tail)| whole.is_match(path) || tail.is_match(path))
    }
}
