"""Errors in memorization-capacity-of-mha (Mahdavi, Liao, Thrampoulidis, ICLR 2024), as records.

Each entry says where the text is wrong or loose, what is right instead (what attnlab
implements), the witness and whether the conclusion survives (:class:`attnlab.errata.TextError`).
None of them touches a theorem's conclusion: Theorem 1 and Propositions 1-5 hold as stated
wherever attnlab measures them (``attnlab verify memorization``). Statements of the experiments
that the measurements do not reproduce are verdicts of their checks (``attnlab reproduce
memorization``), not entries here, unless the text itself is inconsistent.

Not an error of the text: in the induction step of Proposition 1 (App. B) the fresh rows Z'_b
lie in the row space of the old rows Z'_a because the proof picks them so (the last r - 1 rows
dependent on the first k = rank Z' rows, after reordering the examples); attnlab's construction
gives each head a fixed block of examples instead, where with one context per example they need
not (:func:`attnlab.papers.memorization.construction._new_head` handles that case).
"""

from __future__ import annotations

from attnlab.errata import TextError
from attnlab.registry import register_errata

THE_TEXT = "the text"

ERRATA = (
    TextError(
        id="memorization.eq8-output-space",
        where="§4, eq. (8)",
        says="y_hat^(t) = [Z diag(W_V,1, ..., W_V,H) W_O W_D] in R, without the row index t on the right",
        correct="y_hat^(t)T = [Z diag(W_V,1, ..., W_V,H) W_O W_D]_t in R^{d_out}",
        whose=THE_TEXT, kind="notation",
        witness="the right-hand side is a T x d_out matrix; the left-hand side is one row of it",
        survives="yes"),
    TextError(
        id="memorization.sketch-dh-le-d",
        where="§4.1, proof sketch of Proposition 1",
        says="the case d_H <= d",
        correct="d_h <= d (the head size; H is the number of heads)",
        whose=THE_TEXT, kind="typo",
        witness="d_H is defined nowhere; the sketch's case split is on the head size d_h",
        survives="yes"),
    TextError(
        id="memorization.claim2-complement",
        where="App. B, Claim 2",
        says="R^c = [T] - R",
        correct="R^c = [T'] - R: the complement is taken within the T' examples of the induction step",
        whose=THE_TEXT, kind="typo",
        witness="with [T] - R the set contains the fresh examples T'+1..T, on which W+ must vanish, not "
                "saturate; the construction (memorization.theorem1-construction) uses [T'] - R and memorizes "
                "T = H(min(n, d_h)-1)+1 labels to <= 1e-8",
        survives="yes", check="memorization.theorem1-construction"),
    TextError(
        id="memorization.lemma3-index",
        where="App. B, proof of Lemma 3",
        says="for all m+1 <= t <= d",
        correct="for all m+1 <= t <= T; the lemma needs the queries' Kruskal rank >= m+1 only, not n",
        whose=THE_TEXT, kind="typo",
        witness="t indexes examples (up to T); d is the token dimension",
        survives="yes", check="memorization.theorem1-construction"),
    TextError(
        id="memorization.b2-row-index",
        where="App. B.2, the row bound of Z''_a,delta - Z''_a,+",
        says="||[Z''_a,delta - Z''_a,+]_t||_2 = ||E^(t)T theta_delta^(t+T') - E^(t)T theta_+^(t)||_2",
        correct="theta_delta^(t): row t of Z''_a,delta is E^(t)T theta_delta^(t), as the next line of the proof "
                "writes it (E^(t)T (theta_delta^(t) - theta_+^(t)))",
        whose=THE_TEXT, kind="typo",
        witness="Z''_a holds the T' old examples, so its row t is example t's; theta_delta^(t+T') is the softmax of "
                "example t + T', a fresh example or none (t + T' > T for t >= r), and it sits beside example t's "
                "own E^(t)",
        survives="yes", check="memorization.theorem1-construction"),
    TextError(
        id="memorization.appF-shapes",
        where="App. F, definition of f_{d_1,d_2,d_out}",
        says="W_1 in R^{d_2 x d_1}, W_2 in R^{d_out x d_2} with f = W_2^T ReLU(W_1^T x + b_1) + b_2",
        correct="W_1: (d_1, d_2) and W_2: (d_2, d_out) for W_1^T x and W_2^T ReLU(.) to be defined",
        whose=THE_TEXT, kind="notation",
        witness="W_1^T x with W_1 in R^{d_2 x d_1} and x in R^{d_1} multiplies (d_1 x d_2) by d_1 rows: undefined",
        survives="yes"),
    TextError(
        id="memorization.appF-map-slice",
        where="App. F, the weight map after eq. (29)",
        says="W'_1[:, 1:(n+1)d-n]^T c_FCN with W'_1 in R^{m x (n+1)d}",
        correct="W'_1[:, 1:(n+1)d-n] c_FCN (m entries), without the transpose",
        whose=THE_TEXT, kind="notation",
        witness="the transposed slice is ((n+1)d-n) x m and c_FCN has (n+1)d-n entries: the product is undefined",
        survives="yes"),
    TextError(
        id="memorization.appF-map-sign",
        where="App. F, the weight map after eq. (29)",
        says="b_1 := b'_1 - W'_1[...]^T c_FCN",
        correct="b_1 := b'_1 + W'_1[...] c_FCN, since W'_1 x_FCN + b'_1 = W'_1[:, :k] c_FCN + W'_1[:, k:] x + b'_1 "
                "(the minus sign is the inverse map)",
        whose=THE_TEXT, kind="typo",
        witness="T=11, n=3, d=7, m=5, d_out=2, seed 0, outputs up to 1.13: the printed map is off by up to "
                "0.57, the corrected map agrees to 2e-16 (memorization.proposition3-reduction)",
        survives="yes", conclusion="the reduction, and so Proposition 3, holds with the corrected sign",
        check="memorization.proposition3-reduction"),
    TextError(
        id="memorization.dh-below-n",
        where="§5.2, conclusion (3) of Theorem 1",
        says="increasing d_h only helps up to d_h < n",
        correct="up to and including d_h = n, as the Fig. 2 caption says (d_h <= n): H(min(n, d_h)-1)+1 grows "
                "until d_h = n",
        whose=THE_TEXT, kind="typo",
        witness="n=32, H=4: the bound is 121 at d_h=31 and 125 at d_h=32",
        survives="yes", check="memorization.capacity-vs-head-size"),
    TextError(
        id="memorization.asm3-relaxes",
        where="§4.4, after Proposition 4",
        says="Assumption 3 is a more relaxed assumption compared to Assumption 2",
        correct="Assumption 3 relaxes Assumption 1: it is Assumption 1 for e^(t) + mean_i e_i^(t) (Kruskal rank of "
                "the shifted queries >= n); it is unrelated to Assumption 2 (rank of each context)",
        whose=THE_TEXT, kind="wrong statement",
        witness="T=9, n=3, d=7 with every query the same [CLS] vector: Assumption 1 fails (Kruskal rank 1), "
                "Assumption 3 holds, and Proposition 4's layer turns it into Assumption 1 "
                "(memorization.proposition4-skip)",
        survives="yes", check="memorization.proposition4-skip"),
    TextError(
        id="memorization.appJ-bert-positions",
        where="App. J",
        says="BERT's positional encoding is sinusoidal (so Assumption 2 holds by §4.4's argument)",
        correct="BERT learns its position embeddings; Assumption 2 has to be measured on them",
        whose=THE_TEXT, kind="wrong statement",
        witness="all-MiniLM-L6-v2 (BERT architecture) has a learned position table; Assumption 2 holds at its "
                "L0 and L1 on English text (memorization.assumptions)",
        survives="yes", check="memorization.assumptions"),
    TextError(
        id="memorization.appH-head-sizes",
        where="App. H",
        says="We test with two different head sizes H = 4 and H = 8",
        correct="two numbers of heads H = 4 and H = 8 (the head size d_h is 64 in both)",
        whose=THE_TEXT, kind="notation",
        witness="H is the number of heads throughout the text (Table of notation)",
        survives="yes"),
    TextError(
        id="memorization.fig3-caption-count",
        where="App. H, Fig. 3 caption, panels (b) and (e)",
        says="the histogram of the number of saturated heads for each example across the dataset (H x T in total)",
        correct="one number per example: T entries in total; only (c) and (f) have H x T",
        whose=THE_TEXT, kind="typo",
        witness="the histograms of memorization.saturation sum to T in (b)/(e) and to H x T in (c)/(f)",
        survives="yes", check="memorization.saturation"),
)

register_errata(list(ERRATA))

