"""What each verb's ``--help`` says above its options: what it does, what it writes and its exit
statuses. The command line (:mod:`attnlab.cli`) gives each verb its text from :data:`HELP`, the lines of
a paragraph joined (:func:`attnlab.commands.plain_help.unwrapped`) so that ``--help`` wraps them at the
terminal's width."""

HELP: dict[str, str] = {
    "verify": """Run the papers' executable claims and print measured against paper values.

A claim anchored to its text's ledger (a quoted statement) is reproduced, differs (the
text's statement does not hold) or inconclusive (the measurement cannot decide);
attnlab's own statements beyond the texts hold, are refuted or are inconclusive, in a
table of their own; sanity rows test attnlab's code; fail is a bug in attnlab; info
compares with nothing. The last line counts the texts' rows (differs also as distinct
findings), attnlab's own and the rest. Exit status 0 when no claim fails or raises;
with --strict 1 also when a claim differs, is refuted or is inconclusive; 2 for an
unknown name, a paper without claims yet, or a bad seed.""",
    "errata": """List the errors found in the texts: where, what the text says, what is right, whose
error it is (the text, or the source it copies), the kind, the witness, whether the
conclusion survives, and the claim or experiment that measures it.""",
    "coverage": """Print each text's ledger: every statement of the text that can be checked or bears on a
check, quoted, with the claims, experiments and constructions that check it and their
verdicts, or the reason no row does (a definition, a citation, data not available offline).""",
    "list": """List papers, claims, experiments and constructions (with their parameters).""",
    "reproduce": """Run a paper's experiments into a run directory with an HTML and a Markdown report.

The report opens with the count of each verdict and the rows where the measurements
differ from the text. Exit status 1 if an experiment raised or a check failed (a bug
in attnlab); with --strict also if any row differs from the text, refutes attnlab's own
statement or is inconclusive; 130 on Ctrl-C, which prints the run directory, the
experiments it keeps and the command that resumes the run (--out DIR --resume).
--dry-run builds every config as the run would (sizes beyond the machine are refused,
exit 2) and prints what each experiment is estimated to need, then exits 0.""",
    "report": """Rebuild report.html and report.md of RUN_DIR from its stored results.""",
    "sweep": """Run EXPERIMENT over a grid of configs and seeds, resumably, in parallel.

Writes results.csv (one row per run), summary.json and runs/<run_id>/ in --out.

Exit status 1 if any run failed; 130 on Ctrl-C (finished runs are kept, --resume continues).
--dry-run validates every run's config and prints what they are estimated to need.""",
    "bench": """Time and size every attention variant against PyTorch's fused SDPA, in one run.

Prints per variant and n: median time, GFLOP/s, % of the matmul ceiling of the
device and dtype (measured in the same run), peak memory of one forward, and the
ratio to the fused call that computes the same thing (plain, causal or key-padded
SDPA); then the crossover n per variant and the targets at n = 8192 with
pass/fail (a memory slope is measured in 3 to 9 repeats until its verdict is
stable, else "inconclusive: noisy"). SDPA's backends (flash, memory-efficient, math) are timed one by one
where they run. Variants that materialise n x n are
skipped above n = 8192. The full run (n up to 16384) takes 5 to 15 minutes on
2 cores (FlexAttention compiles once per n); --quick 1 to 3. Exit status 0
whether or not the targets pass.""",
    "analyze": """Classify every attention head of a model on real text, with the published criteria side by side.

Writes a run directory: heads.json (per head: entropy, distance, attention
to the previous/next token, [CLS], [SEP] and punctuation; Clark, Kovaleva
and Voita labels; attnlab's pattern scores on the text, TransformerLens'
scores on repeated random tokens; the thresholds with their chance levels), segments.json
(the token ids analysed) and report.html (every head's attention map,
zoomed heads with token labels, tables). Exit status 2 for bad input: an
unknown model, a directory that is not a checkpoint, an unsupported
architecture, a missing or empty text file, --max-tokens out of range.""",
    "construct": """Build a paper's construction, check it in float64, and save it (--out FILE.npz).

The .npz holds the weights and the data they were built for, in the paper's
notation and orientation, so they can be checked with any other code.
A parameter may also be given as --NAME VALUE (e.g. --H 20 for --set H=20).
The check's verdict: reproduced (the weights do what the text says), differs (the
text's statement does not hold for these parameters), inconclusive, or fail (attnlab's
construction is wrong). Exit status 1 on fail, 2 for bad input.

Before building, the memory and time are estimated from the parameters: parameters
that need more memory than the machine has are refused (exit 2, with the size and the
largest value that fits), and an estimate over 10 s is said on stderr
("estimated: 2.3 GiB, about 40 s on one core of this machine"). --dry-run prints the estimate
(with --json, as JSON) and exits 0 without building.""",
}
"""The ``--help`` text of each verb, by its name."""
