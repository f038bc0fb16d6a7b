//! One thing a server does to an answer, as one object ([`Quirk`]), and a server version's list
//! of them ([`Quirks`]).
//!
//! A quirk carries its forward effect (what it does to the parsed answer on its way out: read by
//! [`super::forward`], so by the simulator and by the reconstruction's consistency check), its
//! inverse (what it could have hidden: the answers it could have been given before it acted
//! ([`Quirk::inverse`]), the places in a candidate text where it destroyed whitespace
//! ([`Quirk::sites`]), the `usage` counts it defines ([`Quirk::usage_agrees`]), the id text a cut
//! call leaves ([`Quirk::cut_call_id_text`]) and the rules reading its answers back follows
//! ([`Quirk::read_back`]); the reconstruction is a loop over these), its evidence (what one
//! answer shows of it: the probe) and the fidelity reason a sample carries when the quirk left it
//! uncertain. A quirk that changes how the family's parser reads the text (what it strips, when
//! the reasoning ends, what a cut drops) has no separate forward step: the parser asks the shape
//! for it ([`Quirks::has`]), and its file says what it does. Each file in `quirks/` is one quirk.
//!
//! A worked example, tests/quirk_made_up.rs: a server that appends a space to every call's
//! argument string is one type — its forward effect pushes the space onto each call's
//! arguments, its inverse pops it — and one entry in a shape's list
//! (`Quirks::new(&[&FinishToolCalls, &AppendsSpaceToArguments])`; a version of a known server
//! would be `Quirks::on(&vllm::SHAPE.quirks).plus(&[…])`). The simulator answers with that shape
//! (`sim::SimConfig::shape`), and `reconstruct::reconstruct_as` reads each answer back through
//! the inverse and checks every candidate forward through the same list, so the rebuilt ids are
//! the sampled ones.

use std::any::{Any, TypeId};
use std::fmt;

use serde_json::Value;

use super::read_back::{ReadBackRules, Site, SiteInput, UsageInput};
use super::vllm011_stream::Token;
use super::{ForwardInput, Parsed, ServerShape};
use crate::completion::Completion;

/// What an answer shows of a quirk.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Evidence {
    /// Nothing either way.
    Silent,
    /// A server with this quirk cannot have sent the answer, which shows this.
    Contradicts(&'static str),
    /// Only a server with this quirk sends an answer that shows this.
    Shows(&'static str),
}

/// The form of an answer's call ids, where it tells a quirk apart.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CallIdForm {
    /// The family's own id text (`functions.NAME:N`): passed on from the model.
    Native,
    /// Another form than the family's or OpenRouter's: minted by the server.
    Minted,
}

/// One answer as received, for [`Quirk::evidence`].
#[derive(Debug, Clone, Copy)]
pub struct Seen<'a> {
    /// The chat.completion exactly as received (`null` versus `""`, `index`, as sent).
    pub body: &'a Value,
    /// The same answer read ([`Completion::from_response`]); `None`: it could not be.
    pub answer: Option<&'a Completion>,
    /// Assembled from a stream.
    pub stream: bool,
    /// The form of the first call's id, where it tells anything.
    pub call_ids: Option<CallIdForm>,
    /// The model's family is known and its text is sent forward through every shape: what a
    /// quirk does to the text per syntax is judged there, not by evidence.
    pub forward_checked: bool,
}

/// How the answer an inverse reads back was asked for.
#[derive(Debug, Clone, Copy)]
pub struct InverseInput {
    pub stream: bool,
    /// The detokenizer put a space around every added token.
    pub spaces: bool,
    pub tools_declared: bool,
}

/// One thing a server does to an answer.
pub trait Quirk: Any + Send + Sync {
    /// A stable snake_case name (listings, tests).
    fn name(&self) -> &'static str;

    /// Its effect on the parsed answer, after the family's parser, in list order.
    fn forward(&self, _shape: &ServerShape, _input: &ForwardInput, _parsed: &mut Parsed) {}

    /// A quirk that models the whole stream token by token gives the answer here
    /// ([`super::forward_tokens`]); `None`: the text-level [`super::forward`] does.
    fn forward_tokens(
        &self,
        _shape: &ServerShape,
        _input: &ForwardInput,
        _tokens: &[Token],
    ) -> Option<Parsed> {
        None
    }

    /// The answers this one could have been before the quirk acted (the reconstruction reads
    /// each back). `None`: the answer itself, where the quirk changes nothing an answer shows,
    /// or where what it hides is enumerated by the family's candidates (the answer is then
    /// kept, not copied: it holds the whole text).
    fn inverse(&self, _answer: &Completion, _input: &InverseInput) -> Option<Vec<Completion>> {
        None
    }

    /// The places in `text` (a candidate of what the model wrote) where this quirk destroyed
    /// whitespace the answer cannot show: the reconstruction tries each whitespace there and
    /// lets the count decide.
    fn sites(&self, _shape: &ServerShape, _input: &SiteInput, _text: &str) -> Vec<Site> {
        Vec::new()
    }

    /// Whether `text` gives the `usage` counts this quirk defines (`Err`: what disagrees).
    fn usage_agrees(&self, _text: &str, _input: &UsageInput) -> Result<(), String> {
        Ok(())
    }

    /// The rules reading an answer back follows because of this quirk.
    fn read_back(&self, _rules: &mut ReadBackRules) {}

    /// The id text the model had written when a `length` cut fell inside its last call's id,
    /// where this quirk makes the answer's last call of it (`spaces`: around added tokens).
    fn cut_call_id_text(&self, _answer: &Completion, _spaces: bool) -> Option<String> {
        None
    }

    /// What a received answer shows of this quirk.
    fn evidence(&self, _seen: &Seen) -> Evidence {
        Evidence::Silent
    }

    /// The fidelity reason's stable name (`reconstruct::Reason`) a sample carries when this
    /// quirk left it uncertain; `None`: it never does.
    fn reason(&self) -> Option<&'static str> {
        None
    }
}

impl fmt::Debug for dyn Quirk {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

fn is<Q: Quirk>(quirk: &dyn Quirk) -> bool {
    (quirk as &dyn Any).type_id() == TypeId::of::<Q>()
}

fn same(a: &dyn Quirk, b: &dyn Quirk) -> bool {
    (a as &dyn Any).type_id() == (b as &dyn Any).type_id()
}

/// A server version's quirks, in the order their forward effects apply: a list of its own, or
/// another version's list less some quirks and then more.
#[derive(Clone, Copy)]
pub struct Quirks {
    base: Option<&'static Quirks>,
    minus: &'static [&'static dyn Quirk],
    plus: &'static [&'static dyn Quirk],
}

impl Quirks {
    /// Exactly these.
    pub const fn new(list: &'static [&'static dyn Quirk]) -> Quirks {
        Quirks {
            base: None,
            minus: &[],
            plus: list,
        }
    }

    /// Those of `base` (then [`Quirks::minus`] and [`Quirks::plus`]).
    pub const fn on(base: &'static Quirks) -> Quirks {
        Quirks {
            base: Some(base),
            minus: &[],
            plus: &[],
        }
    }

    /// Without these of the base.
    pub const fn minus(self, list: &'static [&'static dyn Quirk]) -> Quirks {
        Quirks {
            minus: list,
            ..self
        }
    }

    /// With these after the base's.
    pub const fn plus(self, list: &'static [&'static dyn Quirk]) -> Quirks {
        Quirks { plus: list, ..self }
    }

    /// Whether the list holds `Q`.
    pub fn has<Q: Quirk>(&self) -> bool {
        if self.plus.iter().any(|q| is::<Q>(*q)) {
            return true;
        }
        if self.minus.iter().any(|q| is::<Q>(*q)) {
            return false;
        }
        self.base.is_some_and(Quirks::has::<Q>)
    }

    /// Every quirk, in order.
    pub fn all(&self) -> Vec<&'static dyn Quirk> {
        let mut list = self.base.map(Quirks::all).unwrap_or_default();
        list.retain(|q| !self.minus.iter().any(|m| same(*q, *m)));
        list.extend(self.plus.iter().copied());
        list
    }

    /// The rules reading an answer back follows, from every quirk.
    pub fn read_back_rules(&self) -> ReadBackRules {
        let mut rules = ReadBackRules::default();
        for quirk in self.all() {
            quirk.read_back(&mut rules);
        }
        rules
    }

    /// Every quirk's whitespace sites in `text`, in list order.
    pub fn sites(&self, shape: &ServerShape, input: &SiteInput, text: &str) -> Vec<Site> {
        self.all()
            .iter()
            .flat_map(|q| q.sites(shape, input, text))
            .collect()
    }

    /// Whether `text` gives every `usage` count the quirks define (the first disagreement).
    pub fn usage_agrees(&self, text: &str, input: &UsageInput) -> Result<(), String> {
        self.all()
            .iter()
            .try_for_each(|q| q.usage_agrees(text, input))
    }

    /// The id text a cut inside the last call's id left, if a quirk shows it.
    pub fn cut_call_id_text(&self, answer: &Completion, spaces: bool) -> Option<String> {
        self.all()
            .iter()
            .find_map(|q| q.cut_call_id_text(answer, spaces))
    }

    /// The quirks' names, in order.
    pub fn names(&self) -> Vec<&'static str> {
        self.all().iter().map(|q| q.name()).collect()
    }
}

impl fmt::Debug for Quirks {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.names()).finish()
    }
}

impl PartialEq for Quirks {
    fn eq(&self, other: &Quirks) -> bool {
        let (mine, theirs) = (self.all(), other.all());
        mine.len() == theirs.len() && mine.iter().zip(&theirs).all(|(a, b)| same(*a, *b))
    }
}

/// The answers every quirk of `quirks` could have hidden behind `answer` (each quirk's inverse,
/// last quirk first: the first one acted first on the way out), and the quirks whose inverse
/// gave more than one (what is open if nothing decides between them).
pub fn invert(
    quirks: &Quirks,
    answer: Completion,
    input: &InverseInput,
) -> (Vec<Completion>, Vec<&'static dyn Quirk>) {
    let mut answers = vec![answer];
    let mut open = Vec::new();
    for quirk in quirks.all().into_iter().rev() {
        let before = answers.len();
        let mut inverted = Vec::with_capacity(before);
        for a in answers {
            match quirk.inverse(&a, input) {
                Some(earlier) => inverted.extend(earlier),
                None => inverted.push(a),
            }
        }
        answers = inverted;
        if answers.len() > before {
            open.push(quirk);
        }
    }
    (answers, open)
}
