"""What to run: each data set of the report (a :class:`Plan`) and its ``acog evaluate`` jobs."""

from __future__ import annotations

import shlex
from dataclasses import dataclass

SEED = 0
GRID = ("--eta", "grid", "--C", "grid", "--r", "grid")
SUM_RHO_GERMAN = repr(700 / 300)  # the exact T_n / T_p of german, as the CLI reads it back


@dataclass(frozen=True)
class Plan:
    """One data set of the report: which paper rows it has and how to run them."""

    dataset: str
    title: str
    source: str
    """Where the paper's figures are (table names of the paper)."""
    algorithms: str
    """``--algorithms`` value of the sum and cost runs."""
    laplace_algorithms: str
    """The subset that takes rho (the Laplace rows only differ for those)."""
    cost: bool
    """Whether the paper reports cost runs for it."""
    cost_scale: float
    """Our cost is in units of 100 mistakes; times this gives the paper's printed units."""
    cost_unit: str

    @property
    def own_permutations(self) -> bool:
        return self.dataset == "german"


TABLE_II = "perceptron,romma,pa1,paum,cpapb,arow,cog,acog,acog-diag"
TABLE_II_RHO = "paum,cpapb,cog,acog,acog-diag"
PLANS: dict[str, Plan] = {
    "german": Plan(
        "german",
        "german (german.mat, 1000 x 24, 300 : 700)",
        "Table II",
        "paper",
        TABLE_II_RHO,
        True,
        1.0,
        "units of 100 (as Table II)",
    ),
    "a9a": Plan(
        "a9a",
        "a9a (a9a + a9a.t, 48842 x 123, 11687 : 37155)",
        "Table II",
        "paper",
        TABLE_II_RHO,
        True,
        1.0,
        "units of 100 (as Table II)",
    ),
    "ijcnn1": Plan(
        "ijcnn1",
        "ijcnn1 (ijcnn1.trn, 49990 x 22, 4853 : 45137)",
        "Table II",
        "paper",
        TABLE_II_RHO,
        True,
        1.0,
        "units of 100 (as Table II)",
    ),
    "mushrooms": Plan(
        "mushrooms",
        "mushrooms (8124 x 112, 3916 : 4208)",
        "Tables V and VI",
        "cog,acog,acog-diag,ssacog,sacog",
        "cog,acog,acog-diag,ssacog,sacog",
        True,
        100.0,
        "raw mistakes weighted by c (as Tables V and VI)",
    ),
    "usps": Plan(
        "usps",
        "usps (zip.train, 7291 x 256, digit 0 : digits 1-9 = 1194 : 6097)",
        "Tables V and VI",
        "cog,acog,acog-diag,ssacog,sacog",
        "cog,acog,acog-diag,ssacog,sacog",
        True,
        100.0,
        "raw mistakes weighted by c (as Tables V and VI)",
    ),
    "australian": Plan(
        "australian",
        "australian (australian_scale, 690 x 14, 307 : 383)",
        "Table VIII",
        "paper",
        TABLE_II_RHO,
        False,
        1.0,
        "",
    ),
    "dna": Plan(
        "dna",
        "dna (dna.scale, 2000 x 180, class 1 : classes 2, 3 = 464 : 1536)",
        "Table VIII",
        TABLE_II + ",ssacog",
        TABLE_II_RHO + ",ssacog",
        False,
        1.0,
        "",
    ),
}
ORDER = tuple(PLANS)

BLOCKS = {
    "sum": "sum, rho = T_n/T_p",
    "laplace": "sum, Laplace rho",
    "cost": "cost, rho = 9",
    "fixed-sum": "sum, paper's setting",
    "fixed-cost": "cost, paper's setting",
}


@dataclass(frozen=True)
class Job:
    """One ``acog evaluate`` command line and the block of the report its rows go to."""

    block: str
    argv: tuple[str, ...]

    @property
    def command(self) -> str:
        return "acog evaluate " + shlex.join(self.argv)


def common_args(plan: Plan, permutations: int) -> list[str]:
    args = [plan.dataset, "--permutations", str(permutations)]
    return args if plan.own_permutations else [*args, "--seed", str(SEED)]


def jobs_for(plan: Plan, permutations: int) -> list[Job]:
    """The protocol runs (grid-selected), then, for german, the paper's fixed settings."""
    base = common_args(plan, permutations)
    jobs = [
        Job("sum", (*base, "--algorithms", plan.algorithms, "--metric", "sum", *GRID)),
        Job(
            "laplace",
            (*base, "--algorithms", plan.laplace_algorithms, "--metric", "sum", "--rho", "laplace", *GRID),
        ),
    ]
    if plan.cost:
        jobs.append(Job("cost", (*base, "--algorithms", plan.algorithms, "--metric", "cost", *GRID)))
    if plan.dataset == "german":
        jobs += [
            Job(
                "fixed-sum",
                (
                    *base,
                    "--algorithms",
                    "paper",
                    "--metric",
                    "sum",
                    "--eta",
                    "100",
                    "--C",
                    "10",
                    "--r",
                    "0.1",
                ),
            ),
            Job(
                "fixed-cost",
                (
                    *base,
                    "--algorithms",
                    "perceptron,romma,pa1,cpapb,acog,acog-diag",
                    "--metric",
                    "cost",
                    "--eta",
                    "100",
                    "--C",
                    "10",
                ),
            ),
            Job("fixed-cost", (*base, "--algorithms", "cog", "--metric", "cost", "--eta", "10")),
            Job("fixed-cost", (*base, "--algorithms", "arow", "--metric", "cost", "--r", "0.0001")),
            Job("fixed-cost", (*base, "--algorithms", "paum", "--metric", "cost", "--rho", SUM_RHO_GERMAN)),
        ]
    return jobs
