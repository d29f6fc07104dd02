"""Lipstick's car dealership workflow (Amsterdamer et al., VLDB 2012, section 2), under capture.

Modules: M_request (the buyer's bid request), four dealers M_dealer1..4 (state: Cars, SoldCars,
InventoryBids; output: a bid per request, computed by the black box ``calc_bid``), M_agg (the
best, i.e. minimum, bid), M_choice (the buyer accepts or declines) and M_car (the winning dealer
sells a car: its SoldCars state is updated). A run is a series of executions with one buyer; it
ends when the buyer buys or after ``num_exec`` executions. State carries over between executions
and runs, and so does its provenance: a state tuple has the same token every time.

    python -m examples.cars --num-cars 40 --num-exec 3
"""

from __future__ import annotations

import argparse
import logging
import os
import random
import sys
from dataclasses import dataclass, field
from typing import Any

from pyspark.sql import DataFrame, SparkSession
from pyspark.sql import functions as F
from pyspark.sql.types import LongType

from capture_agent import ProvenanceSession, TrackedFrame

MODELS = [
    "Audi A3", "Audi A4", "Audi Q5", "BMW 3", "BMW 5", "BMW X3",
    "Mercedes C", "Mercedes E", "Porsche 911", "VW Golf", "VW Jetta", "VW Passat",
]  # fmt: skip
DEALERS = ("dealer1", "dealer2", "dealer3", "dealer4")


@F.udf(returnType=LongType())
def calc_bid(model, num_avail, num_sold, last_bid):  # type: ignore[no-untyped-def]
    """The dealer's pricing: scarce or popular models cost more; a repeated request never gets a
    higher bid than last time (Lipstick's bid history). No type hints on purpose: pyspark would
    read them as a pandas UDF signature."""
    base = 20_000 + 1_500 * (sum(map(ord, model)) % 7)
    price = base + 400 * (num_sold or 0) - 150 * min(num_avail, 20)
    if last_bid is not None:
        price = min(price, last_bid - 250)
    return int(max(price, 5_000))


@dataclass
class DealerState:
    cars: list[tuple[str, str]]
    sold: list[tuple[str, str]] = field(default_factory=list)
    bids: list[tuple[str, str, str, int]] = field(default_factory=list)


def _frame(spark: SparkSession, rows: list[Any], schema: str) -> DataFrame:
    return spark.createDataFrame(rows, schema)


def dealer(
    prov: ProvenanceSession, name: str, requests: TrackedFrame, state: DealerState
) -> tuple[TrackedFrame, TrackedFrame]:
    """One invocation of a dealer module; returns its bids and its NumCarsByModel."""
    spark = prov.spark
    with prov.module(name) as m:
        cars = m.state(_frame(spark, state.cars, "CarId string, Model string"), "Cars")
        sold = m.state(_frame(spark, state.sold, "CarId string, BidId string"), "SoldCars")
        history = m.state(
            _frame(spark, state.bids, "BidId string, UserId string, Model string, Amount long"),
            "InventoryBids",
        )
        reqs = m.input(requests, "Requests")
        req_model = reqs.select("Model")
        inventory = cars.join(req_model, on="Model").named("Inventory")
        num_cars = (
            inventory.groupBy("Model")
            .agg(F.count("CarId").alias("NumAvail"))
            .named("NumCarsByModel")
        )
        num_sold = (
            inventory.join(sold, on="CarId")
            .groupBy("Model")
            .agg(F.count("CarId").alias("NumSold"))
            .named("NumSoldByModel")
        )
        last_bid = (
            history.join(reqs.select("UserId", "Model"), on=["UserId", "Model"])
            .groupBy("UserId", "Model")
            .agg(F.min("Amount").alias("LastBid"))
        )
        info = (
            reqs.join(num_cars, on="Model")
            .join(num_sold, on="Model", how="left")
            .join(last_bid, on=["UserId", "Model"], how="left")
            .named("AllInfoByModel")
        )
        bids = info.withColumn(
            "Amount", calc_bid("Model", "NumAvail", "NumSold", "LastBid")
        ).select("BidId", "UserId", "Model", "Amount", F.lit(name).alias("Dealer"))
        return m.output(bids, "Bids"), num_cars


@dataclass
class Buyer:
    user: str
    model: str
    reserve: int
    accept_probability: float


def execute(
    prov: ProvenanceSession,
    states: dict[str, DealerState],
    buyer: Buyer,
    execution: int,
    rng: random.Random,
) -> bool:
    """One execution of the workflow; returns whether the buyer bought a car."""
    spark = prov.spark
    bid_id = f"B{execution}"
    with prov.module("request") as m:
        request = prov.source(
            _frame(
                spark,
                [(buyer.user, bid_id, buyer.model)],
                "UserId string, BidId string, Model string",
            ),
            "BidRequest",
        )
        request = m.output(request, "Requests")
    all_bids: TrackedFrame | None = None
    for name in DEALERS:
        bids, _ = dealer(prov, name, request, states[name])
        all_bids = bids if all_bids is None else all_bids.union(bids)
    assert all_bids is not None
    all_bids = all_bids.cache()  # dealers' lineage is published once, by the first job
    for r in all_bids.collect():  # every dealer records the bid it made (state update)
        states[r["Dealer"]].bids.append((r["BidId"], r["UserId"], r["Model"], int(r["Amount"])))
    with prov.module("agg") as m:
        offered = m.input(all_bids, "Bids")
        best = offered.agg(F.min("Amount").alias("Best"))
        winner = offered.join(best, on=offered["Amount"] == best["Best"]).select(
            "BidId", "UserId", "Model", "Amount", "Dealer"
        )
        best_bid = m.output(winner, "BestBid").collect()
    all_bids.unpersist()
    if not best_bid:
        return False
    offer = min(best_bid, key=lambda r: (r["Amount"], r["Dealer"]))
    accept = offer["Amount"] <= buyer.reserve and rng.random() < buyer.accept_probability
    with prov.module("choice") as m:
        choice = prov.source(
            _frame(
                spark,
                [(offer["BidId"], offer["Dealer"], accept)],
                "BidId string, Dealer string, Accept boolean",
            ),
            "Choice",
        )
        choice = m.output(choice.filter(F.col("Accept")), "Decision")
    if not accept:
        choice.count()  # the decision is part of the run's provenance either way
        return False
    dealer_name = offer["Dealer"]
    state = states[dealer_name]
    with prov.module("car") as m:
        cars = m.state(_frame(spark, state.cars, "CarId string, Model string"), "Cars")
        sold_now = {car for car, _ in state.sold}
        available = cars.filter(F.col("Model") == offer["Model"]).filter(
            ~F.col("CarId").isin(sorted(sold_now) or [""])
        )
        decision = m.input(choice, "Decision")
        sale = available.join(decision, how="cross").select("CarId", "BidId").limit(1)
        sold = m.output(sale, "SoldCars").collect()
    state.sold.extend((r["CarId"], r["BidId"]) for r in sold)
    return bool(sold)


def initial_states(num_cars: int, rng: random.Random) -> dict[str, DealerState]:
    per_dealer = max(1, num_cars // len(DEALERS))
    return {
        name: DealerState(cars=[(f"{name}-C{i}", rng.choice(MODELS)) for i in range(per_dealer)])
        for name in DEALERS
    }


def run(prov: ProvenanceSession, num_cars: int, num_exec: int, seed: int = 7) -> tuple[int, bool]:
    """One run: executions until the buyer buys or ``num_exec`` is reached."""
    rng = random.Random(seed)
    states = initial_states(num_cars, rng)
    buyer = Buyer(
        "P1", rng.choice(MODELS), reserve=rng.randrange(18_000, 30_000), accept_probability=0.3
    )
    for execution in range(1, num_exec + 1):
        if execute(prov, states, buyer, execution, rng):
            return execution, True
    return num_exec, False


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--num-cars", type=int, default=40)
    parser.add_argument("--num-exec", type=int, default=3)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING)
    from examples.spark import local_spark

    spark = local_spark("sparkprov-cars")
    try:
        with ProvenanceSession(spark, workflow="car-dealerships") as prov:
            executions, bought = run(prov, args.num_cars, args.num_exec)
        print(
            f"run {prov.run_id}: {executions} executions, bought={bought}, "
            f"{prov.counts()[0]} nodes and {prov.counts()[1]} edges captured"
        )
    finally:
        spark.stop()
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    sys.exit(main())
