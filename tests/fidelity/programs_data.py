"""Data-science and file-format libraries: pandas, pyarrow, the Excel and Word writers and
readers, tabulate, YAML, TOML, SQLAlchemy, scikit-learn, lightgbm, joblib, matplotlib,
seaborn, plotly, pillow, OpenCV, scikit-image and shapely, as short dataset-style programs."""

import base64
import zlib

from tests.fidelity.program import Program

# A small .xls workbook (BIFF8, made once with xlwt, which the runtime lacks): sheet "Sales"
# (region, product, units, price, date) with six rows, sheet "Notes" with a merged cell.
_SALES_XLS_B64 = (
    "eNrtWE1ME1EQnrc//QFaWgQjmDQNiagIB/ViTKBqwJ6o/BxQY6Kl3WBD6ZJte4CLKHDwYGLiScOFBA9eUC/+REW9eTDB6MGExAQ0njhpNPEArPOm27WLa2ITJMHsNG/2zbx53/uZmfe2+2YhuDRzv2EZNlA7iLCue8FVomNYvEUhANiu67xafHqw6A5tK/J60JEuGZ74Xru5D7m/l0GAe9JL5AAfsZyDEYipGSW8hXSC5hBnfA5tTMLYE2Aaix/qaV41xBPEdxC/S7ZPiR8jzTXibWi7xM7CQiTWfMSI49NCI7X5kTN4SH0WSXMQ6uAVj+NL11nBVobjWiqe3mYNIakKZgFdGlUyisblargNFQBnkFq7ulo7OpagFt09C9/1MMC3Yl6/CDv6rdUzQP0Pq979B70HnbhRf0OQAMZBv8B4ME+BDyYl3iJDXzytZLli0V1QxNSckl2Fq4jEg5/SXVMGU2oGDUY0NZlP5GSAfCaVy8pck0ooiJWM5xQUY6qWu4g9+lPJQYXb9al5UkTjXIGGnfEs10dTY8MqihkcDkfpyce1nKKlR8MIFK8EGFa0QSUZTijpdAW/U+gMCljOIB9lZhXyJFRTPUj5GcAtWL3z5W3XQHfkPGnG6d4p3E57+FaADpd5D+zspxYCxdUDNFOPA8SvEOpuqjcQr0UbfDZ11xmVkxNkM0mtTTjOYaJ3kb0l9X1Yn1rpeRSa+hTZj/W56PJY7dz7yAw04m2ZxP78NwEtrIXdusnpcaT4ZMY59oF4/W9nmkcIGHPXjSu4GtZ4FiMFiRckvjvMlARjrwqSiJJoShJKkoHMbJAZIcuGPSNk7o9nsIvO4CAcIosVkZ/B/nkB0TiWYIMlkKXbwCr40GNgCYQVIotmOs9DJpZogyVa5iVasETC8pdgjZlYkg2WRJZeA0uyrFEirN6SNc6ZWLINlmxZo2zBkgmrnSxOSRzrq4nlssFyWeblIqwKA8tFWDVkEZnmWEefc6x2oQYe8I3GO+8XbUVW0RlDftmuWcVss6qyJDuYbXZUGRbCBgtZ8Bgxz8w4Fm3j2Id83oxj7oPPhC5Su1DwKth51SGHHHLIIYc2gxjdN4V7XDLekl3GOzP/rrOGZd35TPLfUi+o+MvhX8pOyOBTg9Gy4mcnyKyIxf6yT/F7Iad+HF2DIRigeQyVHb/4psdK1/PXHQObl0Lljr9ezjz/8fg/ATqaSVg="
)
SALES_XLS = zlib.decompress(base64.b64decode(_SALES_XLS_B64))

PANDAS = [
    Program("pandas_groupby_agg", r'''
import pandas as pd

df = pd.DataFrame({
    "region": ["North", "South", "East", "North", "South", "East", "North", "West"],
    "product": ["A", "B", "A", "B", "A", "C", "C", "A"],
    "units": [10, 4, 7, 3, 12, 5, 8, 6],
    "price": [2.5, 3.0, 2.5, 3.0, 2.5, 4.75, 4.75, 2.5],
})
df["revenue"] = df["units"] * df["price"]
summary = df.groupby("region").agg(
    total_units=("units", "sum"),
    revenue=("revenue", "sum"),
    n=("product", "count"),
    mean_price=("price", "mean"),
).round(3)
print(summary.to_string())
print(summary.sort_values("revenue", ascending=False).index.tolist())
print(df.groupby(["region", "product"])["units"].sum().unstack(fill_value=0))
'''),
    Program("pandas_pivot_table", r'''
import numpy as np
import pandas as pd

rng = np.random.default_rng(0)
n = 40
df = pd.DataFrame({
    "store": rng.choice(["S1", "S2", "S3"], n),
    "weekday": rng.choice(["Mon", "Tue", "Wed"], n),
    "sales": rng.integers(50, 500, n),
})
pt = pd.pivot_table(df, values="sales", index="store", columns="weekday",
                    aggfunc="sum", margins=True, margins_name="Total")
print(pt)
print(df.pivot_table(values="sales", index="weekday", aggfunc=["mean", "max"]).round(2))
'''),
    Program("pandas_merge_join", r'''
import pandas as pd

customers = pd.DataFrame({"cid": [1, 2, 3, 4], "name": ["Ann", "Bob", "Cid", "Dee"],
                          "city": ["Oslo", "Rome", "Oslo", "Lima"]})
orders = pd.DataFrame({"oid": range(100, 107), "cid": [1, 1, 2, 5, 3, 3, 3],
                       "amount": [20.0, 35.5, 12.25, 99.0, 5.0, 7.5, 11.0]})
left = customers.merge(orders, on="cid", how="left", indicator=True)
print(left.to_string(index=False))
outer = customers.merge(orders, on="cid", how="outer", indicator=True)
print(outer["_merge"].value_counts().sort_index().to_dict())
per = (orders.merge(customers, on="cid")
       .groupby(["city", "name"], as_index=False)["amount"].agg(["sum", "count"]))
print(per.to_string(index=False))
print(customers.set_index("cid").join(orders.groupby("cid")["amount"].sum().rename("total")).fillna(0))
'''),
    Program("pandas_timeseries_resample", r'''
import numpy as np
import pandas as pd

idx = pd.date_range("2023-01-01", periods=90, freq="D")
s = pd.Series((np.arange(90) % 7) * 1.5 + np.arange(90) * 0.1, index=idx, name="value")
print(s.resample("W").sum().head(5).round(2))
print(s.resample("ME").agg(["mean", "min", "max"]).round(3))
print(s.asfreq("10D").round(2).to_string())
print(s["2023-02-10":"2023-02-14"].round(2).to_dict())
print(s.index.to_period("M").value_counts().sort_index())
'''),
    Program("pandas_rolling_ewm", r'''
import pandas as pd

prices = pd.Series([100, 102, 101, 105, 107, 106, 110, 108, 111, 115, 114, 118],
                   index=pd.date_range("2022-03-01", periods=12, freq="B"), dtype="float64")
frame = pd.DataFrame({
    "price": prices,
    "sma3": prices.rolling(3).mean(),
    "ewm": prices.ewm(span=4, adjust=False).mean(),
    "ret": prices.pct_change(),
    "max5": prices.rolling(5, min_periods=1).max(),
})
print(frame.round(4).to_string())
print("best day:", frame["ret"].idxmax().date(), round(frame["ret"].max(), 5))
print("cum return:", round(prices.iloc[-1] / prices.iloc[0] - 1, 4))
'''),
    Program("pandas_string_ops", r'''
import pandas as pd

s = pd.Series(["  Alice Smith <alice@example.com>", "bob jones <BOB@mail.org>",
               "Carol  O'Neil <carol@example.com>", None, "dave <dave@test.net>"])
clean = s.str.strip().str.replace(r"\s+", " ", regex=True)
parts = clean.str.extract(r"^(?P<name>[^<]+?)\s*<(?P<email>[^>]+)>$")
parts["email"] = parts["email"].str.lower()
parts["domain"] = parts["email"].str.split("@").str[1]
parts["first"] = parts["name"].str.split().str[0].str.title()
print(parts.to_string())
print(parts["domain"].value_counts().sort_index().to_dict())
print(clean.str.contains("example", na=False).tolist())
print(parts["name"].str.len().tolist())
'''),
    Program("pandas_stdin_csv", r'''
import sys
import pandas as pd

df = pd.read_csv(sys.stdin)
print(df.dtypes.to_string())
print(df.describe().round(3).to_string())
print(df.groupby("team")["score"].mean().round(2).to_dict())
print(df.sort_values(["score", "name"], ascending=[False, True]).head(3).to_string(index=False))
''', stdin="name,team,score,age\nana,red,88.5,31\nben,blue,72.0,45\ncat,red,91.25,28\ndan,green,65.5,39\neve,blue,88.5,22\nfay,green,79.0,35\n"),
    Program("pandas_missing_values", r'''
import numpy as np
import pandas as pd

df = pd.DataFrame({
    "temp": [21.5, np.nan, 23.0, np.nan, np.nan, 26.5, 25.0],
    "humidity": [40, 42, np.nan, 45, 47, np.nan, 50],
    "station": ["a", "a", None, "b", "b", "b", None],
})
print(df.isna().sum().to_dict())
print(df.dropna().to_string())
print(df.ffill().to_string())
print(df[["temp", "humidity"]].interpolate().round(3).to_string())
filled = df.fillna({"temp": df["temp"].mean(), "humidity": 0, "station": "?"})
print(filled.round(2).to_string())
print(df.dropna(thresh=2).shape)
'''),
    Program("pandas_melt_stack", r'''
import pandas as pd

wide = pd.DataFrame({"country": ["NO", "SE", "DK"], "2020": [5.1, 7.2, 3.3],
                     "2021": [5.4, 7.0, 3.9], "2022": [5.9, 7.8, 4.1]})
long = wide.melt(id_vars="country", var_name="year", value_name="gdp")
print(long.sort_values(["country", "year"]).to_string(index=False))
back = long.pivot(index="country", columns="year", values="gdp")
print(back)
stacked = wide.set_index("country").stack()
print(stacked.head(4))
print(stacked.unstack(0))
print(long.groupby("year")["gdp"].sum().round(2).to_dict())
'''),
    Program("pandas_cut_qcut", r'''
import numpy as np
import pandas as pd

rng = np.random.default_rng(0)
ages = pd.Series(rng.integers(1, 90, 50))
groups = pd.cut(ages, bins=[0, 12, 19, 39, 64, 120],
                labels=["child", "teen", "adult", "middle", "senior"])
print(groups.value_counts(sort=False).to_dict())
quart = pd.qcut(ages, 4, labels=["q1", "q2", "q3", "q4"])
print(pd.crosstab(groups, quart))
print(ages.quantile([0.25, 0.5, 0.75]).to_dict())
cat = pd.Categorical(["low", "high", "mid", "low"], categories=["low", "mid", "high"], ordered=True)
print(list(cat.sort_values()), cat.max(), cat.codes.tolist())
'''),
    Program("pandas_multiindex", r'''
import pandas as pd

idx = pd.MultiIndex.from_product([["2022", "2023"], ["Q1", "Q2", "Q3", "Q4"]], names=["year", "quarter"])
df = pd.DataFrame({"revenue": [10, 12, 13, 15, 14, 16, 18, 21],
                   "cost": [7, 8, 9, 9, 10, 10, 11, 12]}, index=idx)
df["margin"] = (df["revenue"] - df["cost"]) / df["revenue"]
print(df.round(3))
print(df.xs("Q4", level="quarter"))
print(df.groupby(level="year").sum().round(3))
print(df.loc[("2023", slice("Q2", "Q3")), "revenue"].tolist())
print(df.swaplevel().sort_index().head(4))
'''),
    Program("pandas_missing_column_error", r'''
import pandas as pd

df = pd.DataFrame({"name": ["a", "b"], "wage": [10.0, 12.5]})
print(df.columns.tolist())
print(df["salary"].mean())
'''),
    Program("pandas_transform_rank", r'''
import pandas as pd

df = pd.DataFrame({
    "dept": ["eng", "eng", "eng", "ops", "ops", "hr", "hr", "hr", "hr"],
    "name": ["a", "b", "c", "d", "e", "f", "g", "h", "i"],
    "salary": [120, 95, 130, 70, 82, 60, 65, 65, 90],
})
g = df.groupby("dept")["salary"]
df["dept_mean"] = g.transform("mean").round(2)
df["z"] = ((df["salary"] - df["dept_mean"]) / g.transform("std")).round(3)
df["rank"] = g.rank(method="dense", ascending=False).astype(int)
df["share"] = (df["salary"] / g.transform("sum")).round(4)
print(df.to_string(index=False))
print(df[df["rank"] == 1][["dept", "name"]].to_string(index=False))
print(df.groupby("dept").filter(lambda x: len(x) > 2)["name"].tolist())
'''),
    Program("pandas_csv_roundtrip", r'''
import pandas as pd

df = pd.DataFrame({
    "id": [1, 2, 3],
    "when": pd.to_datetime(["2021-05-01", "2021-06-15", "2021-07-30"]),
    "label": ["x", "y, with comma", 'q"uote'],
    "value": [0.1, 2.25, -3.5],
})
df.to_csv("out.csv", index=False)
print(open("out.csv").read(), end="")
back = pd.read_csv("out.csv", parse_dates=["when"])
print(back.dtypes.astype(str).to_dict())
print(back.equals(df), back["label"].tolist())
df.to_csv("out.tsv", sep="\t", index=False, columns=["id", "value"])
print(pd.read_csv("out.tsv", sep="\t").sum().to_dict())
'''),
    Program("pandas_json_roundtrip", r'''
import json
import pandas as pd

records = [{"user": "u1", "score": 3, "tags": ["a", "b"]},
           {"user": "u2", "score": 5, "tags": []},
           {"user": "u3", "score": 4, "tags": ["c"]}]
df = pd.DataFrame(records)
df.to_json("data.json", orient="records", lines=True)
print(open("data.json").read(), end="")
back = pd.read_json("data.json", orient="records", lines=True)
print(back.shape, back["score"].sum())
print(df.to_json(orient="split"))
nested = {"meta": {"v": 1}, "items": [{"id": 1, "pos": {"x": 1.5, "y": 2}}, {"id": 2, "pos": {"x": -1, "y": 0}}]}
flat = pd.json_normalize(nested["items"])
print(flat.to_string(index=False))
print(json.dumps(flat.to_dict(orient="list"), sort_keys=True))
'''),
    Program("pandas_datetime_accessor", r'''
import pandas as pd

df = pd.DataFrame({"ts": pd.to_datetime(["2024-01-31 08:15", "2024-02-29 17:45",
                                         "2024-03-10 23:59", "2024-12-25 00:00"])})
df["year"] = df["ts"].dt.year
df["month"] = df["ts"].dt.month_name()
df["dow"] = df["ts"].dt.day_name()
df["quarter"] = df["ts"].dt.quarter
df["is_month_end"] = df["ts"].dt.is_month_end
df["hour"] = df["ts"].dt.hour
print(df.to_string(index=False))
delta = df["ts"].diff()
print(delta.dt.total_seconds().tolist())
print((df["ts"] + pd.offsets.BDay(3)).dt.strftime("%Y-%m-%d").tolist())
print(pd.bdate_range("2024-03-01", "2024-03-15").strftime("%d").tolist())
print(df["ts"].dt.tz_localize("UTC").dt.tz_convert("Asia/Tokyo").dt.strftime("%Y-%m-%d %H:%M %Z").tolist())
'''),
    Program("pandas_input_file", r'''
import pandas as pd

df = pd.read_csv("sales.csv", parse_dates=["date"])
df["month"] = df["date"].dt.to_period("M").astype(str)
print(df.groupby("month")["amount"].sum().to_dict())
print(df.pivot_table(index="rep", columns="month", values="amount", aggfunc="sum", fill_value=0))
top = df.loc[df.groupby("rep")["amount"].idxmax(), ["rep", "date", "amount"]]
print(top.to_string(index=False))
''', files={"sales.csv": b"date,rep,amount\n2023-01-03,kim,120\n2023-01-17,lee,80\n2023-02-02,kim,95\n"
                         b"2023-02-20,lee,130\n2023-02-21,ray,40\n2023-03-05,ray,210\n2023-03-09,kim,60\n"}),
    Program("pandas_crosstab", r'''
import pandas as pd

df = pd.DataFrame({
    "gender": ["f", "m", "f", "f", "m", "m", "f", "m", "f", "m"],
    "smoker": ["no", "no", "yes", "no", "yes", "no", "no", "yes", "yes", "no"],
    "day": ["sat", "sun", "sat", "fri", "sun", "sat", "sun", "fri", "sat", "sun"],
})
print(pd.crosstab(df["gender"], df["smoker"], margins=True))
print(pd.crosstab(df["day"], df["smoker"], normalize="index").round(3))
print(pd.crosstab([df["gender"], df["smoker"]], df["day"]))
'''),
    Program("pandas_duplicates_nlargest", r'''
import pandas as pd

df = pd.DataFrame({
    "email": ["a@x.io", "b@x.io", "a@x.io", "c@x.io", "b@x.io", "d@x.io"],
    "signup": ["2020-01-01", "2020-02-01", "2020-03-01", "2020-01-15", "2020-02-01", "2020-04-01"],
    "spend": [50, 20, 75, 300, 20, 120],
})
print(df.duplicated().tolist())
print(df.duplicated(subset="email", keep="first").sum())
latest = df.sort_values("signup").drop_duplicates("email", keep="last")
print(latest.to_string(index=False))
print(df.nlargest(3, "spend")[["email", "spend"]].to_string(index=False))
print(df.nsmallest(2, "spend")["email"].tolist())
print(df["email"].nunique(), df["email"].unique().tolist())
'''),
    Program("pandas_query_eval_assign", r'''
import numpy as np
import pandas as pd

rng = np.random.default_rng(0)
df = pd.DataFrame({"x": rng.integers(0, 100, 12), "y": rng.integers(0, 100, 12),
                   "kind": ["a", "b", "c"] * 4})
limit = 50
print(df.query("x > @limit and kind != 'b'").to_string())
df = df.assign(ratio=lambda d: (d.x / (d.y + 1)).round(3), total=lambda d: d.x + d.y)
df = df.eval("diff = x - y")
print(df.head(6).to_string())
print(df.where(df["diff"] > 0)["diff"].count(), df["x"].clip(10, 90).tolist())
print(np.select([df.total > 120, df.total > 60], ["high", "mid"], default="low").tolist())
'''),
    Program("pandas_stdin_log_parse", r'''
import sys
import pandas as pd

lines = pd.Series(sys.stdin.read().splitlines())
pat = r"^(?P<date>\S+) (?P<time>\S+) (?P<level>[A-Z]+) \[(?P<module>\w+)\] (?P<msg>.*)$"
log = lines.str.extract(pat)
log["ts"] = pd.to_datetime(log["date"] + " " + log["time"])
log = log.drop(columns=["date", "time"])
print(log["level"].value_counts().sort_index().to_dict())
print(log.groupby("module")["level"].agg(lambda s: (s == "ERROR").sum()).to_dict())
print(log.set_index("ts").resample("1min")["msg"].count().to_dict())
print(log[log["msg"].str.contains("timeout")]["module"].tolist())
''', stdin="2023-06-01 10:00:05 INFO [db] connected\n2023-06-01 10:00:40 WARN [api] slow response\n"
           "2023-06-01 10:01:02 ERROR [db] timeout after 30s\n2023-06-01 10:01:30 INFO [api] request ok\n"
           "2023-06-01 10:02:11 ERROR [api] upstream timeout\n2023-06-01 10:02:59 INFO [db] reconnected\n"),
    Program("pandas_cumulative_ops", r'''
import pandas as pd

df = pd.DataFrame({"day": range(1, 11),
                   "deposits": [100, 0, 50, 0, 0, 200, 0, 25, 0, 75],
                   "withdrawals": [0, 30, 0, 80, 10, 0, 150, 0, 60, 0]})
df["balance"] = (df["deposits"] - df["withdrawals"]).cumsum()
df["peak"] = df["balance"].cummax()
df["drawdown"] = df["balance"] - df["peak"]
df["streak"] = df.groupby((df["withdrawals"] == 0).cumsum()).cumcount()
print(df.to_string(index=False))
print("max drawdown:", df["drawdown"].min(), "on day", int(df.loc[df["drawdown"].idxmin(), "day"]))
print(df[["deposits", "withdrawals"]].expanding().mean().round(2).tail(3).to_string())
'''),
]

PYARROW = [
    Program("pyarrow_compute_filter", r'''
import pyarrow as pa
import pyarrow.compute as pc

t = pa.table({"city": ["Oslo", "Rome", "Lima", "Oslo", "Rome", "Kyiv"],
              "temp": [3.5, 18.0, 22.25, -1.0, 16.5, None],
              "rain": [True, False, False, True, True, False]})
print(t.schema)
print(t.num_rows, t.num_columns, t.column("temp").null_count)
print(pc.sum(t["temp"]).as_py(), round(pc.mean(t["temp"]).as_py(), 4))
warm = t.filter(pc.greater(t["temp"], 10))
print(warm.to_pydict())
print(pc.min_max(t["temp"]).as_py())
print(pc.utf8_upper(t["city"]).to_pylist())
print(t.sort_by([("temp", "descending")]).column("city").to_pylist())
print(pc.value_counts(t["city"]).to_pylist())
'''),
    Program("pyarrow_parquet_roundtrip", r'''
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq

n = 1000
t = pa.table({"id": pa.array(range(n), pa.int32()),
              "group": pa.array([f"g{i % 4}" for i in range(n)]),
              "value": pa.array([i * 0.5 for i in range(n)], pa.float64())})
pq.write_table(t, "data.parquet", row_group_size=300, compression="snappy")
meta = pq.ParquetFile("data.parquet").metadata
print(meta.num_rows, meta.num_row_groups, meta.num_columns)
print([meta.row_group(i).num_rows for i in range(meta.num_row_groups)])
back = pq.read_table("data.parquet", columns=["group", "value"], filters=[("group", "=", "g1")])
print(back.num_rows, back.schema.names)
print(back.equals(t.select(["group", "value"]).filter(pc.equal(t["group"], "g1"))))
print(round(sum(back["value"].to_pylist()), 2))
print(pq.read_schema("data.parquet"))
'''),
    Program("pyarrow_groupby_pandas", r'''
import pandas as pd
import pyarrow as pa

df = pd.DataFrame({"team": ["a", "b", "a", "c", "b", "a"], "pts": [3, 1, 4, 1, 5, 9],
                   "w": [0.5, 1.0, 1.5, 2.0, 2.5, 3.0]})
t = pa.Table.from_pandas(df, preserve_index=False)
agg = t.group_by("team").aggregate([("pts", "sum"), ("pts", "count"), ("w", "mean")]).sort_by("team")
print(agg.to_pydict())
back = agg.to_pandas()
print(back.dtypes.astype(str).to_dict())
print(back.to_string(index=False))
dict_arr = pa.array(["x", "y", "x", "x"]).dictionary_encode()
print(dict_arr.type, dict_arr.indices.to_pylist(), dict_arr.dictionary.to_pylist())
'''),
    Program("pyarrow_feather_ipc", r'''
import pyarrow as pa
import pyarrow.feather as feather
import pyarrow.ipc as ipc

t = pa.table({"k": [1, 2, 3, 4], "v": ["one", "two", "three", "four"],
              "l": [[1], [2, 2], [], [4, 4, 4]]})
feather.write_feather(t, "t.feather", compression="uncompressed")
print(feather.read_table("t.feather").equals(t))
with ipc.new_file("t.arrow", t.schema) as writer:
    for batch in t.to_batches(max_chunksize=2):
        writer.write_batch(batch)
reader = ipc.open_file("t.arrow")
print(reader.num_record_batches, [reader.get_batch(i).num_rows for i in range(reader.num_record_batches)])
print(reader.read_all().column("l").to_pylist())
sink = pa.BufferOutputStream()
with ipc.new_stream(sink, t.schema) as w:
    w.write_table(t)
buf = sink.getvalue()
print(ipc.open_stream(buf).read_all().slice(1, 2).to_pydict())
'''),
    Program("pyarrow_csv_stdin", r'''
import sys
import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.csv as pacsv

data = sys.stdin.buffer.read()
opts = pacsv.ConvertOptions(column_types={"qty": pa.int64(), "price": pa.float64()})
t = pacsv.read_csv(pa.BufferReader(data), convert_options=opts)
print(t.schema)
t = t.append_column("total", pc.multiply(t["qty"], t["price"]))
print(t.to_pydict())
print(round(pc.sum(t["total"]).as_py(), 2))
pacsv.write_csv(t.select(["sku", "total"]), "totals.csv")
print(open("totals.csv").read(), end="")
''', stdin="sku,qty,price,day\nA1,3,9.99,2024-01-02\nB2,10,0.5,2024-01-03\nC3,1,120.0,2024-01-03\n"),
]

OPENPYXL = [
    Program("openpyxl_formulas_roundtrip", r'''
from openpyxl import Workbook, load_workbook

wb = Workbook()
ws = wb.active
ws.title = "Budget"
ws.append(["item", "qty", "unit", "total"])
rows = [("pens", 10, 1.5), ("paper", 4, 6.25), ("ink", 2, 19.99)]
for i, (name, qty, unit) in enumerate(rows, start=2):
    ws.append([name, qty, unit, f"=B{i}*C{i}"])
ws["D5"] = "=SUM(D2:D4)"
ws["A5"] = "sum"
wb.save("budget.xlsx")

wb2 = load_workbook("budget.xlsx")
ws2 = wb2["Budget"]
for row in ws2.iter_rows(values_only=True):
    print(row)
print(ws2.dimensions, ws2.max_row, ws2.max_column)
cached = load_workbook("budget.xlsx", data_only=True)["Budget"]
print(cached["D2"].value, cached["B3"].value)
print(round(sum(q * u for _, q, u in rows), 2))
'''),
    Program("openpyxl_styles_merge", r'''
from openpyxl import Workbook, load_workbook
from openpyxl.styles import Alignment, Font, PatternFill
from openpyxl.utils import get_column_letter

wb = Workbook()
ws = wb.active
ws.title = "Report"
ws.merge_cells("A1:D1")
ws["A1"] = "Quarterly report"
ws["A1"].font = Font(bold=True, size=14)
ws["A1"].alignment = Alignment(horizontal="center")
ws.append(["q", "sales", "cost", "margin"])
for q, s, c in [("Q1", 100, 60), ("Q2", 120, 70), ("Q3", 90, 65)]:
    ws.append([q, s, c, (s - c) / s])
for cell in ws["D"][2:]:
    cell.number_format = "0.0%"
ws["B2"].fill = PatternFill("solid", fgColor="FFFF00")
for col in range(1, 5):
    ws.column_dimensions[get_column_letter(col)].width = 12 + col
ws.freeze_panes = "A3"
wb.save("report.xlsx")

r = load_workbook("report.xlsx")["Report"]
print([str(m) for m in r.merged_cells.ranges])
print(r["A1"].value, r["A1"].font.bold, r["A1"].font.sz, r["A1"].alignment.horizontal)
print(r["B2"].fill.fgColor.rgb, r.freeze_panes)
print([r.column_dimensions[get_column_letter(c)].width for c in range(1, 5)])
print([(c.value if not isinstance(c.value, float) else round(c.value, 4), c.number_format) for c in r["D"][2:]])
'''),
    Program("openpyxl_pandas_sheets", r'''
import pandas as pd

a = pd.DataFrame({"name": ["x", "y", "z"], "score": [1.5, 2.5, 3.5]})
b = pd.DataFrame({"k": [10, 20], "flag": [True, False]})
with pd.ExcelWriter("multi.xlsx", engine="openpyxl") as w:
    a.to_excel(w, sheet_name="scores", index=False)
    b.to_excel(w, sheet_name="flags", index=False, startrow=2)
sheets = pd.read_excel("multi.xlsx", sheet_name=None, engine="openpyxl")
print(list(sheets))
print(sheets["scores"].to_string(index=False))
print(pd.read_excel("multi.xlsx", sheet_name="flags", header=2).to_string(index=False))
print(sheets["scores"]["score"].sum(), sheets["scores"].dtypes.astype(str).to_dict())
'''),
    Program("openpyxl_iter_and_sheets", r'''
from openpyxl import Workbook, load_workbook

wb = Workbook()
ws = wb.active
ws.title = "data"
for r in range(1, 21):
    ws.append([r, r * r, f"row{r}", r % 3 == 0])
summary = wb.create_sheet("summary", 0)
summary["A1"] = "rows"
summary["B1"] = ws.max_row
wb.save("book.xlsx")

wb = load_workbook("book.xlsx", read_only=True)
print(wb.sheetnames)
data = wb["data"]
total = 0
flagged = []
for n, sq, label, flag in data.iter_rows(min_row=1, values_only=True):
    total += sq
    if flag:
        flagged.append(label)
print(total, flagged)
print(wb["summary"]["B1"].value)
print([c.value for c in next(data.iter_rows(min_row=5, max_row=5))])
wb.close()
'''),
]

XLSXWRITER = [
    Program("xlsxwriter_formats_readback", r'''
import xlsxwriter
from openpyxl import load_workbook

wb = xlsxwriter.Workbook("inv.xlsx")
ws = wb.add_worksheet("Invoice")
bold = wb.add_format({"bold": True, "bg_color": "#DDEBF7"})
money = wb.add_format({"num_format": "$#,##0.00"})
ws.write_row(0, 0, ["item", "qty", "price", "total"], bold)
items = [("bolts", 100, 0.25), ("nuts", 250, 0.1), ("washers", 75, 0.05)]
for r, (name, qty, price) in enumerate(items, start=1):
    ws.write_string(r, 0, name)
    ws.write_number(r, 1, qty)
    ws.write_number(r, 2, price, money)
    ws.write_formula(r, 3, f"=B{r + 1}*C{r + 1}", money, round(qty * price, 2))
ws.write_formula(4, 3, "=SUM(D2:D4)", money, round(sum(q * p for _, q, p in items), 2))
ws.set_column("A:A", 14)
wb.close()

sheet = load_workbook("inv.xlsx")["Invoice"]
print([c.value for c in sheet[5]])
print(sheet["C2"].number_format, sheet["A1"].font.b, sheet.column_dimensions["A"].width)
vals = load_workbook("inv.xlsx", data_only=True)["Invoice"]
print([vals.cell(row=r, column=4).value for r in range(2, 6)])
'''),
    Program("xlsxwriter_chart_parts", r'''
import re
import zipfile
import xlsxwriter

wb = xlsxwriter.Workbook("chart.xlsx")
ws = wb.add_worksheet("data")
months = ["Jan", "Feb", "Mar", "Apr", "May"]
ws.write_column("A2", months)
ws.write_column("B2", [10, 14, 9, 17, 21])
ws.write_column("C2", [7, 8, 12, 11, 15])
ws.write_row("A1", ["month", "north", "south"])
chart = wb.add_chart({"type": "column"})
for col in ("B", "C"):
    chart.add_series({"name": f"=data!${col}$1", "categories": "=data!$A$2:$A$6",
                      "values": f"=data!${col}$2:${col}$6"})
chart.set_title({"name": "Sales"})
ws.insert_chart("E2", chart)
line = wb.add_chart({"type": "line"})
line.add_series({"values": "=data!$B$2:$B$6"})
wb.add_worksheet("other").insert_chart("B2", line)
wb.close()

with zipfile.ZipFile("chart.xlsx") as z:
    names = sorted(n for n in z.namelist() if "chart" in n or "drawing" in n)
    print(names)
    xml = z.read("xl/charts/chart1.xml").decode()
print(xml.count("<c:ser>"), "c:barChart" in xml, re.findall(r"<c:f>([^<]+)</c:f>", xml)[:3])
'''),
    Program("xlsxwriter_pandas_engine", r'''
import pandas as pd

df = pd.DataFrame({"product": ["alpha", "beta", "gamma", "delta"],
                   "q1": [120, 80, 95, 130], "q2": [140, 60, 100, 150]})
df["growth"] = ((df["q2"] - df["q1"]) / df["q1"]).round(4)
with pd.ExcelWriter("pd.xlsx", engine="xlsxwriter") as writer:
    df.to_excel(writer, sheet_name="growth", index=False)
    book = writer.book
    sheet = writer.sheets["growth"]
    pct = book.add_format({"num_format": "0.0%"})
    sheet.set_column("D:D", 10, pct)
    sheet.conditional_format("D2:D5", {"type": "cell", "criteria": "<", "value": 0,
                                       "format": book.add_format({"font_color": "red"})})
    sheet.autofilter(0, 0, len(df), len(df.columns) - 1)
back = pd.read_excel("pd.xlsx", sheet_name="growth")
print(back.to_string(index=False))
print(back.equals(df), back["growth"].idxmin())
'''),
    Program("xlsxwriter_utility", r'''
from xlsxwriter.utility import (xl_cell_to_rowcol, xl_col_to_name, xl_range,
                                xl_range_abs, xl_rowcol_to_cell)

print([xl_col_to_name(c) for c in (0, 25, 26, 51, 701, 702, 16383)])
print(xl_rowcol_to_cell(0, 0), xl_rowcol_to_cell(99, 27, row_abs=True, col_abs=True))
print(xl_cell_to_rowcol("AB100"), xl_cell_to_rowcol("XFD1048576"))
print(xl_range(0, 0, 9, 2), xl_range_abs(1, 1, 5, 5))
'''),
]

XLRD = [
    Program("xlrd_read_sheets", r'''
import xlrd

book = xlrd.open_workbook("sales.xls")
print(book.nsheets, book.sheet_names(), book.datemode)
sh = book.sheet_by_name("Sales")
print(sh.nrows, sh.ncols)
header = sh.row_values(0)
for r in range(1, sh.nrows):
    row = dict(zip(header, sh.row_values(r)))
    when = xlrd.xldate.xldate_as_datetime(row["date"], book.datemode).date()
    print(when.isoformat(), row["region"], int(row["units"]), round(row["units"] * row["price"], 2))
print(sh.col_values(2, start_rowx=1))
print([xlrd.sheet.ctype_text[c.ctype] for c in sh.row(1)])
''', files={"sales.xls": SALES_XLS}),
    Program("xlrd_pandas_read_excel", r'''
import base64
import warnings
import zlib
import pandas as pd

warnings.filterwarnings("ignore", message="The xlrd engine is deprecated")

blob = zlib.decompress(base64.b64decode(
    "eNrtWE1ME1EQnrc//QFaWgQjmDQNiagIB/ViTKBqwJ6o/BxQY6Kl3WBD6ZJte4CLKHDwYGLiScOFBA9eUC/+REW9eTDB6MGExAQ0njhpNPEArPOm27WLa2ITJMHsNG/2zbx53/uZmfe2+2YhuDRzv2EZNlA7iLCue8FVomNYvEUhANiu67xafHqw6A5tK/J60JEuGZ74Xru5D7m/l0GAe9JL5AAfsZyDEYipGSW8hXSC5hBnfA5tTMLYE2Aaix/qaV41xBPEdxC/S7ZPiR8jzTXibWi7xM7CQiTWfMSI49NCI7X5kTN4SH0WSXMQ6uAVj+NL11nBVobjWiqe3mYNIakKZgFdGlUyisblargNFQBnkFq7ulo7OpagFt09C9/1MMC3Yl6/CDv6rdUzQP0Pq979B70HnbhRf0OQAMZBv8B4ME+BDyYl3iJDXzytZLli0V1QxNSckl2Fq4jEg5/SXVMGU2oGDUY0NZlP5GSAfCaVy8pck0ooiJWM5xQUY6qWu4g9+lPJQYXb9al5UkTjXIGGnfEs10dTY8MqihkcDkfpyce1nKKlR8MIFK8EGFa0QSUZTijpdAW/U+gMCljOIB9lZhXyJFRTPUj5GcAtWL3z5W3XQHfkPGnG6d4p3E57+FaADpd5D+zspxYCxdUDNFOPA8SvEOpuqjcQr0UbfDZ11xmVkxNkM0mtTTjOYaJ3kb0l9X1Yn1rpeRSa+hTZj/W56PJY7dz7yAw04m2ZxP78NwEtrIXdusnpcaT4ZMY59oF4/W9nmkcIGHPXjSu4GtZ4FiMFiRckvjvMlARjrwqSiJJoShJKkoHMbJAZIcuGPSNk7o9nsIvO4CAcIosVkZ/B/nkB0TiWYIMlkKXbwCr40GNgCYQVIotmOs9DJpZogyVa5iVasETC8pdgjZlYkg2WRJZeA0uyrFEirN6SNc6ZWLINlmxZo2zBkgmrnSxOSRzrq4nlssFyWeblIqwKA8tFWDVkEZnmWEefc6x2oQYe8I3GO+8XbUVW0RlDftmuWcVss6qyJDuYbXZUGRbCBgtZ8Bgxz8w4Fm3j2Id83oxj7oPPhC5Su1DwKth51SGHHHLIIYc2gxjdN4V7XDLekl3GOzP/rrOGZd35TPLfUi+o+MvhX8pOyOBTg9Gy4mcnyKyIxf6yT/F7Iad+HF2DIRigeQyVHb/4psdK1/PXHQObl0Lljr9ezjz/8fg/ATqaSVg="))
with open("sales.xls", "wb") as f:
    f.write(blob)
df = pd.read_excel("sales.xls", sheet_name="Sales", engine="xlrd")
print(df.dtypes.astype(str).to_dict())
df["revenue"] = df["units"] * df["price"]
print(df.groupby("region")["revenue"].sum().round(2).to_dict())
print(df.groupby(df["date"].dt.month)["units"].sum().to_dict())
print(pd.read_excel("sales.xls", sheet_name=None, engine="xlrd", header=None)["Notes"].to_string())
'''),
    Program("xlrd_merged_and_formats", r'''
import base64
import zlib
import xlrd

data = zlib.decompress(base64.b64decode(
    "eNrtWE1ME1EQnrc//QFaWgQjmDQNiagIB/ViTKBqwJ6o/BxQY6Kl3WBD6ZJte4CLKHDwYGLiScOFBA9eUC/+REW9eTDB6MGExAQ0njhpNPEArPOm27WLa2ITJMHsNG/2zbx53/uZmfe2+2YhuDRzv2EZNlA7iLCue8FVomNYvEUhANiu67xafHqw6A5tK/J60JEuGZ74Xru5D7m/l0GAe9JL5AAfsZyDEYipGSW8hXSC5hBnfA5tTMLYE2Aaix/qaV41xBPEdxC/S7ZPiR8jzTXibWi7xM7CQiTWfMSI49NCI7X5kTN4SH0WSXMQ6uAVj+NL11nBVobjWiqe3mYNIakKZgFdGlUyisblargNFQBnkFq7ulo7OpagFt09C9/1MMC3Yl6/CDv6rdUzQP0Pq979B70HnbhRf0OQAMZBv8B4ME+BDyYl3iJDXzytZLli0V1QxNSckl2Fq4jEg5/SXVMGU2oGDUY0NZlP5GSAfCaVy8pck0ooiJWM5xQUY6qWu4g9+lPJQYXb9al5UkTjXIGGnfEs10dTY8MqihkcDkfpyce1nKKlR8MIFK8EGFa0QSUZTijpdAW/U+gMCljOIB9lZhXyJFRTPUj5GcAtWL3z5W3XQHfkPGnG6d4p3E57+FaADpd5D+zspxYCxdUDNFOPA8SvEOpuqjcQr0UbfDZ11xmVkxNkM0mtTTjOYaJ3kb0l9X1Yn1rpeRSa+hTZj/W56PJY7dz7yAw04m2ZxP78NwEtrIXdusnpcaT4ZMY59oF4/W9nmkcIGHPXjSu4GtZ4FiMFiRckvjvMlARjrwqSiJJoShJKkoHMbJAZIcuGPSNk7o9nsIvO4CAcIosVkZ/B/nkB0TiWYIMlkKXbwCr40GNgCYQVIotmOs9DJpZogyVa5iVasETC8pdgjZlYkg2WRJZeA0uyrFEirN6SNc6ZWLINlmxZo2zBkgmrnSxOSRzrq4nlssFyWeblIqwKA8tFWDVkEZnmWEefc6x2oQYe8I3GO+8XbUVW0RlDftmuWcVss6qyJDuYbXZUGRbCBgtZ8Bgxz8w4Fm3j2Id83oxj7oPPhC5Su1DwKth51SGHHHLIIYc2gxjdN4V7XDLekl3GOzP/rrOGZd35TPLfUi+o+MvhX8pOyOBTg9Gy4mcnyKyIxf6yT/F7Iad+HF2DIRigeQyVHb/4psdK1/PXHQObl0Lljr9ezjz/8fg/ATqaSVg="))
book = xlrd.open_workbook(file_contents=data, formatting_info=True)
notes = book.sheet_by_index(1)
print(notes.name, notes.merged_cells)
print([(notes.cell_type(r, 0), notes.cell_value(r, 0)) for r in range(notes.nrows)])
sales = book.sheet_by_index(0)
cell = sales.cell(1, 4)
xf = book.xf_list[cell.xf_index]
print(book.format_map[xf.format_key].format_str)
print(xlrd.xldate_as_tuple(cell.value, book.datemode))
print(xlrd.formula.cellname(3, 4), xlrd.formula.cellnameabs(3, 4), xlrd.formula.colname(27))
'''),
    Program("xlrd_xlsx_not_supported", r'''
import openpyxl
import xlrd

wb = openpyxl.Workbook()
wb.active["A1"] = 42
wb.save("new.xlsx")
print("xlrd", xlrd.__version__)
book = xlrd.open_workbook("new.xlsx")
print(book.nsheets)
'''),
]

DOCX = [
    Program("docx_build_and_read", r'''
from docx import Document
from docx.shared import Pt

doc = Document()
doc.add_heading("Project summary", level=0)
doc.add_heading("Goals", level=1)
p = doc.add_paragraph("We want to ")
p.add_run("ship fast").bold = True
p.add_run(" and ")
r = p.add_run("stay correct")
r.italic = True
r.font.size = Pt(14)
for item in ["parse input", "validate", "report"]:
    doc.add_paragraph(item, style="List Bullet")
doc.add_paragraph("Step one", style="List Number")
doc.add_page_break()
doc.add_heading("Appendix", level=1)
doc.save("summary.docx")

d = Document("summary.docx")
for para in d.paragraphs:
    if para.text:
        print(f"{para.style.name:12} | {para.text}")
runs = d.paragraphs[2].runs
print([(x.text, x.bold, x.italic) for x in runs])
print(runs[3].font.size.pt, len(d.paragraphs))
print([h.text for h in d.paragraphs if h.style.name.startswith("Heading")])
'''),
    Program("docx_table_totals", r'''
from docx import Document

data = [("Widget", 4, 3.5), ("Gadget", 2, 12.0), ("Doohickey", 10, 0.75)]
doc = Document()
doc.add_heading("Order", level=1)
table = doc.add_table(rows=1, cols=3)
table.style = "Table Grid"
hdr = table.rows[0].cells
for cell, text in zip(hdr, ["Item", "Qty", "Price"]):
    cell.text = text
for name, qty, price in data:
    cells = table.add_row().cells
    cells[0].text = name
    cells[1].text = str(qty)
    cells[2].text = f"{price:.2f}"
row = table.add_row().cells
merged = row[0].merge(row[1])
merged.text = "Total"
row[2].text = f"{sum(q * p for _, q, p in data):.2f}"
doc.save("order.docx")

t = Document("order.docx").tables[0]
print(len(t.rows), len(t.columns), t.style.name)
for r in t.rows:
    print([c.text for c in r.cells])
body = t.rows[1:-1]
print(sum(int(r.cells[1].text) * float(r.cells[2].text) for r in body))
'''),
    Program("docx_sections_properties", r'''
from docx import Document
from docx.enum.section import WD_ORIENT
from docx.enum.text import WD_ALIGN_PARAGRAPH
from docx.shared import Cm, Inches

doc = Document()
props = doc.core_properties
props.title = "Field notes"
props.author = "Test Author"
props.keywords = "alpha, beta"
sec = doc.sections[0]
sec.orientation = WD_ORIENT.LANDSCAPE
sec.page_width, sec.page_height = sec.page_height, sec.page_width
sec.left_margin = Cm(2)
para = doc.add_paragraph("Centered text")
para.alignment = WD_ALIGN_PARAGRAPH.CENTER
para.paragraph_format.space_after = Inches(0.25)
new = doc.add_section()
new.header.paragraphs[0].text = "Second section header"
doc.add_paragraph("In section two")
doc.save("notes.docx")

d = Document("notes.docx")
cp = d.core_properties
print(cp.title, "|", cp.author, "|", cp.keywords)
print(len(d.sections))
s0 = d.sections[0]
print(s0.orientation, round(s0.page_width.inches, 2), round(s0.page_height.inches, 2), round(s0.left_margin.cm, 2))
print(d.sections[1].header.paragraphs[0].text, d.sections[1].header.is_linked_to_previous)
p = d.paragraphs[0]
print(p.alignment, round(p.paragraph_format.space_after.inches, 2))
'''),
    Program("docx_find_replace", r'''
import re
from docx import Document

doc = Document()
for line in ["Dear {name},", "Your order {order} ships on {date}.", "Thanks, {name}'s team"]:
    doc.add_paragraph(line)
doc.save("template.docx")

values = {"name": "Ada", "order": "#1042", "date": "2024-05-01"}
d = Document("template.docx")
for para in d.paragraphs:
    for run in para.runs:
        run.text = re.sub(r"\{(\w+)\}", lambda m: values[m.group(1)], run.text)
d.save("letter.docx")
out = Document("letter.docx")
print("\n".join(p.text for p in out.paragraphs))
words = sum(len(p.text.split()) for p in out.paragraphs)
print("words:", words)
'''),
]

TABULATE = [
    Program("tabulate_formats", r'''
from tabulate import tabulate

rows = [["Mercury", 0.387, 0.055, 0], ["Venus", 0.723, 0.815, 0],
        ["Earth", 1.0, 1.0, 1], ["Mars", 1.524, 0.107, 2]]
headers = ["planet", "au", "mass", "moons"]
for fmt in ["plain", "grid", "github", "pipe", "rst"]:
    print(fmt)
    print(tabulate(rows, headers=headers, tablefmt=fmt, floatfmt=".2f"))
'''),
    Program("tabulate_dataframe", r'''
import pandas as pd
from tabulate import tabulate

df = pd.DataFrame({"model": ["lin", "tree", "knn"], "rmse": [3.14159, 2.71828, 2.5],
                   "fit_s": [0.01, 0.2, 0.05]})
print(tabulate(df, headers="keys", tablefmt="psql", showindex=False))
print(tabulate(df.set_index("model"), headers="keys", tablefmt="simple", floatfmt=(".1f", ".3f", ".2f")))
print(tabulate({"a": [1, 2, None], "b": ["x", None, "z"]}, headers="keys", missingval="-"))
print(tabulate([["right", 1.5], ["left", 22.25]], colalign=("left", "right"), tablefmt="presto"))
'''),
    Program("tabulate_stdin_report", r'''
import sys
from collections import defaultdict
from tabulate import tabulate

totals = defaultdict(lambda: [0, 0.0])
for line in sys.stdin:
    if not line.strip():
        continue
    who, hours, rate = line.split()
    totals[who][0] += int(hours)
    totals[who][1] += int(hours) * float(rate)
rows = [[w, h, pay] for w, (h, pay) in sorted(totals.items())]
rows.append(["TOTAL", sum(r[1] for r in rows), sum(r[2] for r in rows)])
print(tabulate(rows, headers=["worker", "hours", "pay"], tablefmt="fancy_grid", floatfmt=",.2f"))
print(tabulate(rows, headers=["worker", "hours", "pay"], tablefmt="html", floatfmt=".1f"))
''', stdin="amy 8 21.5\nbo 6 18\namy 4 21.5\ncy 10 30.25\nbo 7 18\n\n"),
]

YAML = [
    Program("yaml_roundtrip_config", r'''
import yaml

config = {
    "service": {"name": "api", "port": 8080, "debug": False},
    "replicas": 3,
    "tags": ["web", "prod"],
    "limits": {"cpu": 0.5, "memory": "512Mi"},
    "empty": None,
}
text = yaml.safe_dump(config, sort_keys=True, default_flow_style=False)
print(text, end="")
with open("config.yaml", "w") as f:
    f.write(text)
with open("config.yaml") as f:
    loaded = yaml.safe_load(f)
print(loaded == config, type(loaded["limits"]["cpu"]).__name__)
print(yaml.safe_dump(config["tags"], default_flow_style=True), end="")
print(yaml.safe_load("when: 2024-02-29\nyes_str: 'yes'\nbool: yes\noct: 0o17\nnum: 1e3"))
'''),
    Program("yaml_multi_docs_stdin", r'''
import sys
import yaml

docs = list(yaml.safe_load_all(sys.stdin))
print(len(docs))
for d in docs:
    print(d["kind"], d["metadata"]["name"], sorted(d.get("spec", {})))
pods = [d for d in docs if d["kind"] == "Pod"]
print(sum(len(p["spec"]["containers"]) for p in pods))
print(yaml.safe_dump_all([{"n": i} for i in range(3)], explicit_start=True), end="")
''', stdin="""---
kind: Pod
metadata: {name: web}
spec:
  containers:
    - name: nginx
      image: nginx:1.25
    - name: sidecar
      image: busybox
---
kind: Service
metadata:
  name: web-svc
spec:
  ports: [80, 443]
  selector: {app: web}
---
kind: Pod
metadata: {name: worker}
spec:
  containers: [{name: w, image: python:3.11}]
"""),
    Program("yaml_custom_tags", r'''
from dataclasses import dataclass, asdict
import yaml

@dataclass
class Point:
    x: float
    y: float

def point_representer(dumper, p):
    return dumper.represent_mapping("!point", asdict(p))

def point_constructor(loader, node):
    return Point(**loader.construct_mapping(node))

yaml.SafeDumper.add_representer(Point, point_representer)
yaml.SafeLoader.add_constructor("!point", point_constructor)

shape = {"name": "tri", "vertices": [Point(0, 0), Point(1.5, 0), Point(0, 2)]}
text = yaml.safe_dump(shape, sort_keys=False)
print(text, end="")
back = yaml.safe_load(text)
print(back["vertices"])
print(back == shape)
anchors = yaml.safe_load("base: &b {a: 1, b: 2}\nderived:\n  <<: *b\n  b: 3\n")
print(anchors)
'''),
    Program("yaml_scanner_error", r'''
import yaml

good = yaml.safe_load("a: 1\nb: [1, 2]\n")
print(good)
bad = "key: value\n  other: : broken\n\t- tab"
print(yaml.safe_load(bad))
'''),
]

TOML = [
    Program("toml_roundtrip", r'''
import toml

doc = {
    "title": "demo",
    "owner": {"name": "Tom", "active": True},
    "database": {"ports": [8000, 8001, 8002], "max_conn": 5000, "ratio": 0.75},
    "servers": {"alpha": {"ip": "10.0.0.1"}, "beta": {"ip": "10.0.0.2"}},
}
text = toml.dumps(doc)
print(text, end="")
back = toml.loads(text)
print(back == doc)
print(back["database"]["ports"][1], sorted(back["servers"]))
'''),
    Program("toml_file_config", r'''
import tomllib
import toml

src = """
[tool.app]
name = "svc"
version = "1.2.3"
features = ["a", "b"]

[[tool.app.jobs]]
name = "build"
retries = 2

[[tool.app.jobs]]
name = "test"
retries = 0
timeout = 1.5
"""
with open("pyproject.toml", "w") as f:
    f.write(src)
cfg = toml.load("pyproject.toml")
app = cfg["tool"]["app"]
print(app["name"], app["version"], [j["name"] for j in app["jobs"]])
app["version"] = "1.3.0"
app["jobs"].append({"name": "deploy", "retries": 1})
with open("pyproject.toml", "w") as f:
    toml.dump(cfg, f)
with open("pyproject.toml", "rb") as f:
    again = tomllib.load(f)
print(again["tool"]["app"]["version"], len(again["tool"]["app"]["jobs"]))
print(again == cfg)
print(open("pyproject.toml").read(), end="")
'''),
    Program("toml_decode_error", r'''
import toml

print(toml.loads('ok = 1\n[section]\nx = "y"\n'))
toml.loads('name = "unterminated\nother = 2\n')
'''),
]

SQLALCHEMY = [
    Program("sqlalchemy_core_crud", r'''
from sqlalchemy import (Column, Integer, MetaData, String, Table, create_engine, delete,
                        func, insert, select, update)

engine = create_engine("sqlite:///:memory:")
meta = MetaData()
users = Table("users", meta, Column("id", Integer, primary_key=True),
              Column("name", String(50), nullable=False), Column("age", Integer))
meta.create_all(engine)
with engine.begin() as conn:
    conn.execute(insert(users), [{"name": n, "age": a} for n, a in
                                 [("ann", 31), ("bob", 25), ("cy", 42), ("di", 25)]])
    conn.execute(update(users).where(users.c.name == "bob").values(age=26))
    conn.execute(delete(users).where(users.c.age > 40))
with engine.connect() as conn:
    for row in conn.execute(select(users).order_by(users.c.age, users.c.name)):
        print(row.id, row.name, row.age)
    print(conn.execute(select(func.count(), func.avg(users.c.age))).one())
    stmt = select(users.c.name).where(users.c.name.like("%n%"))
    print(str(stmt).replace("\n", " "))
    print(conn.execute(stmt).scalars().all())
'''),
    Program("sqlalchemy_orm_relationship", r'''
from sqlalchemy import ForeignKey, String, create_engine, func, select
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, mapped_column, relationship

class Base(DeclarativeBase):
    pass

class Author(Base):
    __tablename__ = "authors"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    books: Mapped[list["Book"]] = relationship(back_populates="author", order_by="Book.year")

    def __repr__(self):
        return f"Author({self.name!r})"

class Book(Base):
    __tablename__ = "books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str]
    year: Mapped[int]
    author_id: Mapped[int] = mapped_column(ForeignKey("authors.id"))
    author: Mapped[Author] = relationship(back_populates="books")

engine = create_engine("sqlite://")
Base.metadata.create_all(engine)
with Session(engine) as s:
    le = Author(name="Le Guin", books=[Book(title="Earthsea", year=1968), Book(title="Dispossessed", year=1974)])
    ba = Author(name="Banks", books=[Book(title="Excession", year=1996)])
    s.add_all([le, ba, Author(name="Nobody")])
    s.commit()
    for a in s.scalars(select(Author).order_by(Author.name)):
        print(a, [(b.title, b.year) for b in a.books])
    q = (select(Author.name, func.count(Book.id).label("n"))
         .outerjoin(Book).group_by(Author.id).order_by(func.count(Book.id).desc(), Author.name))
    print(s.execute(q).all())
    print(s.scalars(select(Book.title).join(Author).where(Author.name == "Le Guin", Book.year > 1970)).all())
'''),
    Program("sqlalchemy_pandas_sql", r'''
import pandas as pd
from sqlalchemy import create_engine, inspect, text

engine = create_engine("sqlite://")
df = pd.DataFrame({"city": ["Oslo", "Rome", "Oslo", "Lima", "Rome"],
                   "temp": [3.5, 18.0, 1.0, 22.5, 16.0], "day": [1, 1, 2, 1, 2]})
print(df.to_sql("weather", engine, index=False))
print(inspect(engine).get_table_names(), [c["name"] for c in inspect(engine).get_columns("weather")])
q = "SELECT city, AVG(temp) AS avg_t, COUNT(*) AS n FROM weather GROUP BY city ORDER BY avg_t DESC"
print(pd.read_sql(q, engine).round(2).to_string(index=False))
with engine.connect() as conn:
    res = conn.execute(text("SELECT city FROM weather WHERE temp > :t ORDER BY temp"), {"t": 10})
    print([r[0] for r in res])
print(pd.read_sql_table("weather", engine).shape)
'''),
    Program("sqlalchemy_text_window", r'''
from sqlalchemy import create_engine, text

engine = create_engine("sqlite:///shop.db")
with engine.begin() as conn:
    conn.execute(text("CREATE TABLE sales (rep TEXT, month INTEGER, amount REAL)"))
    rows = [("a", 1, 100), ("a", 2, 150), ("a", 3, 90), ("b", 1, 200), ("b", 2, 50), ("b", 3, 75)]
    conn.execute(text("INSERT INTO sales VALUES (:rep, :month, :amount)"),
                 [dict(rep=r, month=m, amount=a) for r, m, a in rows])
with engine.connect() as conn:
    q = text("""
        SELECT rep, month, amount,
               SUM(amount) OVER (PARTITION BY rep ORDER BY month) AS running,
               RANK() OVER (PARTITION BY month ORDER BY amount DESC) AS rnk
        FROM sales ORDER BY rep, month
    """)
    for row in conn.execute(q):
        print(tuple(row))
    print(conn.execute(text("SELECT rep, MAX(amount) FROM sales GROUP BY rep ORDER BY rep")).all())
engine.dispose()
import os
print(os.path.exists("shop.db"))
'''),
]

SKLEARN = [
    Program("sklearn_logreg_iris", r'''
from sklearn.datasets import load_iris
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import accuracy_score, confusion_matrix
from sklearn.model_selection import train_test_split

X, y = load_iris(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
clf = LogisticRegression(max_iter=1000)
clf.fit(Xtr, ytr)
pred = clf.predict(Xte)
print("accuracy", round(accuracy_score(yte, pred), 4))
print(confusion_matrix(yte, pred))
print(clf.coef_.round(2))
print(clf.predict_proba(Xte[:3]).round(3))
'''),
    Program("sklearn_random_forest_cancer", r'''
import numpy as np
from sklearn.datasets import load_breast_cancer
from sklearn.ensemble import RandomForestClassifier
from sklearn.metrics import f1_score
from sklearn.model_selection import train_test_split

data = load_breast_cancer()
Xtr, Xte, ytr, yte = train_test_split(data.data, data.target, test_size=0.25, random_state=0)
rf = RandomForestClassifier(n_estimators=50, max_depth=6, random_state=0, n_jobs=1)
rf.fit(Xtr, ytr)
print("train", round(rf.score(Xtr, ytr), 4), "test", round(rf.score(Xte, yte), 4))
print("f1", round(f1_score(yte, rf.predict(Xte)), 4))
order = np.argsort(rf.feature_importances_)[::-1][:5]
for i in order:
    print(f"{data.feature_names[i]:25s} {rf.feature_importances_[i]:.4f}")
'''),
    Program("sklearn_linear_regression_diabetes", r'''
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LinearRegression
from sklearn.metrics import mean_absolute_error, mean_squared_error, r2_score
from sklearn.model_selection import train_test_split

X, y = load_diabetes(return_X_y=True, as_frame=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.2, random_state=0)
model = LinearRegression().fit(Xtr, ytr)
pred = model.predict(Xte)
print("r2", round(r2_score(yte, pred), 4))
print("rmse", round(mean_squared_error(yte, pred) ** 0.5, 3))
print("mae", round(mean_absolute_error(yte, pred), 3))
print({k: round(float(v), 2) for k, v in zip(X.columns, model.coef_)})
print(round(model.intercept_, 3))
'''),
    Program("sklearn_kmeans_blobs", r'''
import numpy as np
from sklearn.cluster import KMeans
from sklearn.datasets import make_blobs
from sklearn.metrics import adjusted_rand_score, silhouette_score

X, y = make_blobs(n_samples=300, centers=3, cluster_std=0.8, random_state=0)
km = KMeans(n_clusters=3, n_init=10, random_state=0).fit(X)
print(sorted(np.bincount(km.labels_).tolist()))
centers = km.cluster_centers_[np.lexsort(km.cluster_centers_.T[::-1])]
print(centers.round(3))
print("inertia", round(km.inertia_, 3))
print("ari", round(adjusted_rand_score(y, km.labels_), 4))
print("silhouette", round(silhouette_score(X, km.labels_), 4))
for k in (2, 4, 5):
    print(k, round(KMeans(n_clusters=k, n_init=10, random_state=0).fit(X).inertia_, 2))
'''),
    Program("sklearn_pipeline_gridsearch", r'''
from sklearn.datasets import load_wine
from sklearn.model_selection import GridSearchCV, StratifiedKFold
from sklearn.pipeline import Pipeline
from sklearn.preprocessing import StandardScaler
from sklearn.svm import SVC

X, y = load_wine(return_X_y=True)
pipe = Pipeline([("scale", StandardScaler()), ("svc", SVC())])
grid = {"svc__C": [0.1, 1, 10], "svc__gamma": ["scale", 0.01]}
cv = StratifiedKFold(n_splits=5, shuffle=True, random_state=0)
search = GridSearchCV(pipe, grid, cv=cv, n_jobs=1)
search.fit(X, y)
print(search.best_params_)
print(round(search.best_score_, 4))
for params, score in zip(search.cv_results_["params"], search.cv_results_["mean_test_score"]):
    print(params, round(score, 4))
'''),
    Program("sklearn_pca_digits", r'''
import numpy as np
from sklearn.datasets import load_digits
from sklearn.decomposition import PCA

X, y = load_digits(return_X_y=True)
pca = PCA(n_components=10, svd_solver="full").fit(X)
print(X.shape, pca.components_.shape)
print(pca.explained_variance_ratio_.round(4))
print(round(pca.explained_variance_ratio_.sum(), 4))
Z = pca.transform(X)
print(np.abs(Z[:3, :3]).round(2))
full = PCA(svd_solver="full").fit(X)
print("components for 90%:", int(np.searchsorted(np.cumsum(full.explained_variance_ratio_), 0.9) + 1))
'''),
    Program("sklearn_tree_cross_val", r'''
from sklearn.datasets import load_iris
from sklearn.model_selection import cross_val_score, KFold
from sklearn.tree import DecisionTreeClassifier, export_text

data = load_iris()
tree = DecisionTreeClassifier(max_depth=3, random_state=0)
scores = cross_val_score(tree, data.data, data.target, cv=KFold(5, shuffle=True, random_state=0))
print(scores.round(4), round(scores.mean(), 4))
tree.fit(data.data, data.target)
print(export_text(tree, feature_names=list(data.feature_names), decimals=2))
print(tree.get_depth(), tree.get_n_leaves())
'''),
    Program("sklearn_column_transformer", r'''
import pandas as pd
from sklearn.compose import ColumnTransformer
from sklearn.linear_model import LogisticRegression
from sklearn.pipeline import make_pipeline
from sklearn.preprocessing import OneHotEncoder, StandardScaler

df = pd.DataFrame({
    "color": ["red", "blue", "green", "blue", "red", "green", "red", "blue"],
    "size": ["S", "M", "L", "L", "M", "S", "L", "S"],
    "weight": [1.2, 3.4, 2.2, 5.0, 1.9, 2.8, 4.1, 0.9],
    "price": [10, 25, 18, 40, 15, 20, 33, 8],
})
y = [0, 1, 0, 1, 0, 1, 1, 0]
pre = ColumnTransformer([
    ("cat", OneHotEncoder(handle_unknown="ignore"), ["color", "size"]),
    ("num", StandardScaler(), ["weight", "price"]),
])
model = make_pipeline(pre, LogisticRegression(C=1.0))
model.fit(df, y)
print(list(pre.get_feature_names_out()))
print(pre.transform(df.head(2)).round(3))
new = pd.DataFrame({"color": ["purple", "red"], "size": ["M", "L"], "weight": [2.0, 4.5], "price": [22, 38]})
print(model.predict(new).tolist(), model.predict_proba(new).round(3).tolist())
'''),
    Program("sklearn_tfidf_naive_bayes", r'''
import numpy as np
from sklearn.feature_extraction.text import TfidfVectorizer
from sklearn.naive_bayes import MultinomialNB
from sklearn.pipeline import make_pipeline

texts = ["cheap pills buy now", "meeting at noon tomorrow", "win money now free",
         "lunch with the team", "free offer click now", "project status meeting notes",
         "buy cheap watches", "notes from the team call"]
labels = ["spam", "ham", "spam", "ham", "spam", "ham", "spam", "ham"]
vec = TfidfVectorizer(ngram_range=(1, 1), min_df=1)
X = vec.fit_transform(texts)
print(X.shape, X.nnz)
vocab = vec.get_feature_names_out()
print(list(vocab[:8]))
idf = dict(zip(vocab, vec.idf_.round(4)))
print({k: float(idf[k]) for k in ["now", "team", "meeting", "watches"]})
clf = make_pipeline(TfidfVectorizer(), MultinomialNB(alpha=0.5)).fit(texts, labels)
tests = ["free pills now", "team meeting tomorrow", "click to win"]
print([(t, str(p)) for t, p in zip(tests, clf.predict(tests))])
print(np.round(clf.predict_proba(tests), 3))
'''),
    Program("sklearn_not_fitted_error", r'''
from sklearn.ensemble import RandomForestRegressor
from sklearn.preprocessing import StandardScaler

scaler = StandardScaler().fit([[1.0, 2.0], [3.0, 6.0]])
print(scaler.mean_, scaler.scale_)
model = RandomForestRegressor(n_estimators=5, random_state=0)
print(model.predict([[1.0, 2.0]]))
'''),
    Program("sklearn_classification_report", r'''
from sklearn.datasets import load_digits
from sklearn.metrics import classification_report
from sklearn.model_selection import train_test_split
from sklearn.neighbors import KNeighborsClassifier

X, y = load_digits(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
knn = KNeighborsClassifier(n_neighbors=3, n_jobs=1).fit(Xtr, ytr)
pred = knn.predict(Xte)
print(classification_report(yte, pred, digits=3))
wrong = (pred != yte).nonzero()[0]
print(len(wrong), [(int(yte[i]), int(pred[i])) for i in wrong[:6]])
'''),
    Program("sklearn_gradient_boosting", r'''
from sklearn.datasets import make_regression
from sklearn.ensemble import GradientBoostingRegressor
from sklearn.metrics import mean_absolute_error, r2_score
from sklearn.model_selection import train_test_split

X, y = make_regression(n_samples=400, n_features=8, n_informative=5, noise=10.0, random_state=0)
Xtr, Xte, ytr, yte = train_test_split(X, y, random_state=0)
gbr = GradientBoostingRegressor(n_estimators=100, max_depth=3, learning_rate=0.1, subsample=0.8, random_state=0)
gbr.fit(Xtr, ytr)
pred = gbr.predict(Xte)
print("r2", round(r2_score(yte, pred), 4), "mae", round(mean_absolute_error(yte, pred), 3))
print(gbr.feature_importances_.round(3))
staged = [round(r2_score(yte, p), 3) for i, p in enumerate(gbr.staged_predict(Xte)) if i % 25 == 24]
print(staged)
'''),
    Program("sklearn_dbscan_moons", r'''
import numpy as np
from sklearn.cluster import DBSCAN, AgglomerativeClustering
from sklearn.datasets import make_moons
from sklearn.metrics import adjusted_rand_score

X, y = make_moons(n_samples=200, noise=0.05, random_state=0)
db = DBSCAN(eps=0.3, min_samples=5).fit(X)
labels = db.labels_
print("clusters", len(set(labels.tolist()) - {-1}), "noise", int((labels == -1).sum()))
print(np.bincount(labels[labels >= 0]).tolist())
print("ari", round(adjusted_rand_score(y, labels), 4))
agg = AgglomerativeClustering(n_clusters=2, linkage="single").fit(X)
print("single-link ari", round(adjusted_rand_score(y, agg.labels_), 4))
'''),
    Program("sklearn_inconsistent_samples", r'''
import numpy as np
from sklearn.linear_model import LinearRegression

X = np.arange(20, dtype=float).reshape(10, 2)
y = np.arange(9, dtype=float)
print(X.shape, y.shape)
LinearRegression().fit(X, y)
'''),
    Program("sklearn_ridge_lasso_cv", r'''
import numpy as np
from sklearn.datasets import load_diabetes
from sklearn.linear_model import LassoCV, RidgeCV
from sklearn.model_selection import KFold
from sklearn.preprocessing import StandardScaler

X, y = load_diabetes(return_X_y=True)
X = StandardScaler().fit_transform(X)
ridge = RidgeCV(alphas=np.logspace(-3, 3, 13)).fit(X, y)
print("ridge alpha", round(float(ridge.alpha_), 4), "r2", round(ridge.score(X, y), 4))
lasso = LassoCV(cv=KFold(5, shuffle=True, random_state=0), alphas=30, random_state=0, n_jobs=1).fit(X, y)
print("lasso alpha", round(float(lasso.alpha_), 3), "r2", round(lasso.score(X, y), 4))
print("nonzero", int(np.sum(lasso.coef_ != 0)), lasso.coef_.round(1) + 0.0)
'''),
    Program("sklearn_stdin_regression", r'''
import sys
import numpy as np
from sklearn.linear_model import LinearRegression
from sklearn.preprocessing import PolynomialFeatures

pts = np.array([[float(v) for v in line.split(",")] for line in sys.stdin if line.strip()])
x, y = pts[:, :1], pts[:, 1]
lin = LinearRegression().fit(x, y)
print("slope", round(float(lin.coef_[0]), 4), "intercept", round(float(lin.intercept_), 4))
print("r2", round(lin.score(x, y), 4))
poly = PolynomialFeatures(degree=2, include_bias=False)
quad = LinearRegression().fit(poly.fit_transform(x), y)
print(poly.get_feature_names_out(["x"]).tolist(), quad.coef_.round(4).tolist(), round(float(quad.intercept_), 4))
print(lin.predict([[10.0]]).round(3).tolist())
''', stdin="0,1.1\n1,2.9\n2,5.2\n3,7.1\n4,8.8\n5,11.2\n6,13.1\n7,14.8\n"),
    Program("sklearn_impute_scale", r'''
import numpy as np
from sklearn.impute import KNNImputer, SimpleImputer
from sklearn.preprocessing import MinMaxScaler, RobustScaler, LabelEncoder

X = np.array([[1.0, np.nan, 3.0], [4.0, 5.0, np.nan], [7.0, 8.0, 9.0], [np.nan, 2.0, 6.0]])
print(SimpleImputer(strategy="mean").fit_transform(X).round(3))
print(SimpleImputer(strategy="median").fit(X).statistics_)
print(KNNImputer(n_neighbors=2).fit_transform(X).round(3))
filled = SimpleImputer(strategy="constant", fill_value=0).fit_transform(X)
print(MinMaxScaler().fit_transform(filled).round(3))
print(RobustScaler().fit_transform(filled).round(3))
le = LabelEncoder().fit(["cat", "dog", "cat", "bird"])
print(le.classes_.tolist(), le.transform(["dog", "bird"]).tolist())
'''),
    Program("sklearn_roc_auc", r'''
from sklearn.datasets import make_classification
from sklearn.linear_model import LogisticRegression
from sklearn.metrics import (average_precision_score, precision_recall_fscore_support,
                             roc_auc_score, roc_curve)
from sklearn.model_selection import train_test_split

X, y = make_classification(n_samples=500, n_features=10, n_informative=4, weights=[0.7, 0.3], random_state=0)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.3, random_state=0, stratify=y)
clf = LogisticRegression(max_iter=500).fit(Xtr, ytr)
proba = clf.predict_proba(Xte)[:, 1]
print("auc", round(roc_auc_score(yte, proba), 4))
print("ap", round(average_precision_score(yte, proba), 4))
fpr, tpr, thr = roc_curve(yte, proba)
print(len(thr), fpr[:4].round(3).tolist(), tpr[:4].round(3).tolist())
for t in (0.3, 0.5, 0.7):
    p, r, f, _ = precision_recall_fscore_support(yte, proba >= t, average="binary")
    print(t, round(p, 3), round(r, 3), round(f, 3))
'''),
]

LIGHTGBM = [
    Program("lightgbm_classifier_cancer", r'''
import lightgbm as lgb
from sklearn.datasets import load_breast_cancer
from sklearn.metrics import accuracy_score, log_loss
from sklearn.model_selection import train_test_split

X, y = load_breast_cancer(return_X_y=True)
Xtr, Xte, ytr, yte = train_test_split(X, y, test_size=0.25, random_state=0)
clf = lgb.LGBMClassifier(n_estimators=60, learning_rate=0.1, num_leaves=15, random_state=0,
                         deterministic=True, force_col_wise=True, n_jobs=1, verbose=-1)
clf.fit(Xtr, ytr)
proba = clf.predict_proba(Xte)
print("acc", round(accuracy_score(yte, clf.predict(Xte)), 4))
print("logloss", round(log_loss(yte, proba), 4))
print(proba[:4, 1].round(4))
print(clf.n_features_in_, clf.booster_.num_trees())
'''),
    Program("lightgbm_train_regression", r'''
import lightgbm as lgb
import numpy as np

rng = np.random.default_rng(0)
X = rng.normal(size=(600, 5))
y = 3 * X[:, 0] - 2 * X[:, 1] ** 2 + np.sin(X[:, 2]) + rng.normal(scale=0.1, size=600)
train = lgb.Dataset(X[:500], label=y[:500], params={"verbose": -1})
valid = lgb.Dataset(X[500:], label=y[500:], reference=train)
params = {"objective": "regression", "metric": "rmse", "learning_rate": 0.1, "num_leaves": 15,
          "seed": 0, "deterministic": True, "force_row_wise": True, "num_threads": 1, "verbose": -1}
evals = {}
booster = lgb.train(params, train, num_boost_round=80, valid_sets=[valid], valid_names=["valid"],
                    callbacks=[lgb.record_evaluation(evals)])
rmse = evals["valid"]["rmse"]
print(len(rmse), [round(float(rmse[i]), 4) for i in (0, 19, 39, 79)])
pred = booster.predict(X[500:])
print(round(float(np.sqrt(np.mean((pred - y[500:]) ** 2))), 4))
print(booster.feature_importance("split").tolist())
'''),
    Program("lightgbm_importance_early_stop", r'''
import lightgbm as lgb
import pandas as pd
from sklearn.datasets import make_classification
from sklearn.model_selection import train_test_split

X, y = make_classification(n_samples=800, n_features=6, n_informative=3, n_redundant=1, random_state=0)
X = pd.DataFrame(X, columns=[f"f{i}" for i in range(6)])
Xtr, Xva, ytr, yva = train_test_split(X, y, test_size=0.25, random_state=0)
model = lgb.LGBMClassifier(n_estimators=500, learning_rate=0.05, random_state=0, deterministic=True,
                           force_col_wise=True, n_jobs=1, verbose=-1)
model.fit(Xtr, ytr, eval_X=(Xva,), eval_y=(yva,), eval_metric="binary_logloss",
          callbacks=[lgb.early_stopping(stopping_rounds=20, verbose=False)])
print("best iteration", model.best_iteration_)
print("best score", round(model.best_score_["valid_0"]["binary_logloss"], 4))
gain = model.booster_.feature_importance("gain")
print(dict(zip(model.feature_name_, gain.round(1).tolist())))
print(round(model.score(Xva, yva), 4))
'''),
]

JOBLIB = [
    Program("joblib_parallel_sequential", r'''
import math
from joblib import Parallel, delayed

def work(n):
    return n, sum(math.isqrt(k) for k in range(n * 1000))

results = Parallel(n_jobs=1)(delayed(work)(n) for n in range(1, 9))
print(results)
squares = Parallel(n_jobs=1, backend="sequential")(delayed(pow)(i, 2) for i in range(10))
print(squares)
'''),
    Program("joblib_dump_load", r'''
import os
import joblib
import numpy as np
from sklearn.linear_model import LogisticRegression

rng = np.random.default_rng(0)
X = rng.normal(size=(100, 3))
y = (X[:, 0] + X[:, 1] > 0).astype(int)
model = LogisticRegression().fit(X, y)
obj = {"model": model, "weights": np.arange(12.0).reshape(3, 4), "meta": {"v": 2}}
paths = joblib.dump(obj, "bundle.joblib", compress=3)
print(paths, os.path.exists("bundle.joblib"))
back = joblib.load("bundle.joblib")
print(back["meta"], back["weights"].sum())
print(np.array_equal(back["model"].predict(X), model.predict(X)))
print(back["model"].coef_.round(3))
joblib.dump(np.arange(5), "arr.pkl")
print(joblib.load("arr.pkl", mmap_mode=None).tolist())
'''),
    Program("joblib_memory_cache", r'''
from joblib import Memory

calls = []
memory = Memory(location="cache_dir", verbose=0)

@memory.cache
def slow_square(x):
    calls.append(x)
    return x * x

print([slow_square(i) for i in (2, 3, 2, 3, 4)])
print("computed:", calls)
print(slow_square.check_call_in_cache(3), slow_square.check_call_in_cache(9))
slow_square.clear(warn=False)
print(slow_square(2), calls)
'''),
    Program("joblib_threading_backend", r'''
from joblib import Parallel, delayed, parallel_config

def checksum(chunk):
    return sum(ord(c) * (i + 1) for i, c in enumerate(chunk))

text = "the quick brown fox jumps over the lazy dog " * 20
chunks = [text[i:i + 64] for i in range(0, len(text), 64)]
with parallel_config(backend="threading", n_jobs=1):
    sums = Parallel()(delayed(checksum)(c) for c in chunks)
print(len(chunks), sums[:5], sum(sums))
gen = Parallel(n_jobs=1, backend="threading", return_as="generator")(delayed(len)(c) for c in chunks)
print(list(gen))
'''),
]

MATPLOTLIB = [
    Program("matplotlib_line_plot", r'''
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

x = np.linspace(0, 2 * np.pi, 100)
fig, ax = plt.subplots(figsize=(6, 4), dpi=100)
for k in (1, 2, 3):
    ax.plot(x, np.sin(k * x), label=f"sin({k}x)")
ax.axhline(0, color="gray", linewidth=0.5)
ax.set(title="Harmonics", xlabel="x", ylabel="y", xlim=(0, 2 * np.pi))
ax.legend(loc="upper right")
fig.savefig("lines.png")
print(len(ax.lines), [l.get_label() for l in ax.lines])
print([t.get_text() for t in ax.get_legend().get_texts()], ax.get_title(), ax.get_xlim()[1] == 2 * np.pi)
with Image.open("lines.png") as im:
    print(im.size, im.mode)
print(round(float(ax.lines[1].get_ydata().max()), 4))
'''),
    Program("matplotlib_bar_patches", r'''
import matplotlib.pyplot as plt
from matplotlib.patches import Rectangle

labels = ["apples", "pears", "plums", "figs"]
a = [12, 7, 9, 4]
b = [5, 11, 3, 8]
fig, ax = plt.subplots()
x = range(len(labels))
bars1 = ax.bar([i - 0.2 for i in x], a, width=0.4, label="2022")
bars2 = ax.bar([i + 0.2 for i in x], b, width=0.4, label="2023")
ax.bar_label(bars1, padding=2)
ax.set_xticks(list(x), labels)
fig.savefig("bars.png", dpi=80)
rects = [p for p in ax.patches if isinstance(p, Rectangle)]
print(len(rects), [int(r.get_height()) for r in rects])
print([t.get_text() for t in ax.texts])
print([t.get_text() for t in ax.get_xticklabels()])
print([round(float(r.get_x() + r.get_width() / 2), 2) for r in bars2])
'''),
    Program("matplotlib_subplots_grid", r'''
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

rng = np.random.default_rng(0)
fig, axes = plt.subplots(2, 3, figsize=(9, 5), sharex=True)
for i, ax in enumerate(axes.flat):
    ax.plot(np.cumsum(rng.normal(size=50)))
    ax.set_title(f"walk {i}")
fig.suptitle("Random walks")
fig.tight_layout()
fig.savefig("grid.png", dpi=50)
print(len(fig.axes), axes.shape, [ax.get_title() for ax in axes.flat])
print(fig._suptitle.get_text(), [len(ax.lines) for ax in axes.flat])
with Image.open("grid.png") as im:
    print(im.size)
print(round(float(axes[1, 2].lines[0].get_ydata()[-1]), 4))
'''),
    Program("matplotlib_hist_counts", r'''
import matplotlib.pyplot as plt
import numpy as np

rng = np.random.default_rng(0)
data = rng.normal(loc=10, scale=2, size=1000)
fig, ax = plt.subplots()
counts, edges, patches = ax.hist(data, bins=12, range=(4, 16), edgecolor="black")
print(counts.astype(int).tolist())
print(edges.round(2).tolist())
print(len(patches), int(counts.sum()), int(((data < 4) | (data >= 16)).sum()))
c2, _, _ = ax.hist(data, bins=5, density=True, histtype="step")
print(c2.round(4).tolist())
fig.savefig("hist.png")
'''),
    Program("matplotlib_scatter_colorbar", r'''
import matplotlib
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

print(matplotlib.get_backend())
rng = np.random.default_rng(0)
x, y = rng.uniform(0, 1, (2, 60))
fig, ax = plt.subplots(figsize=(5, 5), dpi=72)
sc = ax.scatter(x, y, c=x + y, s=20, cmap="viridis")
cb = fig.colorbar(sc, ax=ax, label="x+y")
ax.annotate("max", xy=(x.max(), y[x.argmax()]), xytext=(0.5, 0.9), arrowprops={"arrowstyle": "->"})
fig.savefig("scatter.png")
print(len(fig.axes), sc.get_offsets().shape, round(float(sc.get_array().max()), 4))
print(cb.ax.get_ylabel(), [t.get_text() for t in ax.texts])
with Image.open("scatter.png") as im:
    print(im.size, im.getpixel((0, 0)))
'''),
    Program("matplotlib_imshow_pie", r'''
import matplotlib.pyplot as plt
import numpy as np
from PIL import Image

fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 4), dpi=50, facecolor="white")
img = np.arange(64).reshape(8, 8)
im = a1.imshow(img, cmap="gray", interpolation="nearest")
print(im.get_array().shape, im.get_clim())
wedges, texts, autotexts = a2.pie([40, 30, 20, 10], labels=["a", "b", "c", "d"], autopct="%1.1f%%",
                                  startangle=90)
print(len(wedges), [t.get_text() for t in texts], [t.get_text() for t in autotexts])
print([round(float(w.theta2 - w.theta1), 1) for w in wedges])
fig.savefig("mixed.png", facecolor="white")
with Image.open("mixed.png") as pic:
    print(pic.size, pic.convert("RGB").getpixel((1, 1)))
fig.savefig("mixed.pdf")
with open("mixed.pdf", "rb") as f:
    print(f.read(5))
'''),
]

SEABORN = [
    Program("seaborn_barplot", r'''
import matplotlib.pyplot as plt
import pandas as pd
import seaborn as sns

df = pd.DataFrame({"day": ["Mon", "Mon", "Tue", "Tue", "Wed", "Wed", "Wed"],
                   "visits": [10, 14, 8, 12, 20, 18, 22]})
ax = sns.barplot(data=df, x="day", y="visits", errorbar=None, color="steelblue")
ax.figure.savefig("bar.png")
print(len(ax.patches), [round(float(p.get_height()), 3) for p in ax.patches])
print([t.get_text() for t in ax.get_xticklabels()], ax.get_ylabel())
plt.close("all")
'''),
    Program("seaborn_heatmap_corr", r'''
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

rng = np.random.default_rng(0)
a = rng.normal(size=200)
df = pd.DataFrame({"a": a, "b": a * 0.8 + rng.normal(scale=0.5, size=200),
                   "c": rng.normal(size=200), "d": -a + rng.normal(scale=0.2, size=200)})
corr = df.corr().round(2)
print(corr)
fig, ax = plt.subplots(figsize=(5, 4))
sns.heatmap(corr, annot=True, fmt=".2f", cmap="coolwarm", vmin=-1, vmax=1, ax=ax)
fig.savefig("heat.png")
print(len(ax.texts), [t.get_text() for t in ax.texts[:4]])
print(len(fig.axes), [t.get_text() for t in ax.get_yticklabels()])
'''),
    Program("seaborn_histplot_kde", r'''
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

rng = np.random.default_rng(0)
df = pd.DataFrame({"value": np.concatenate([rng.normal(0, 1, 300), rng.normal(4, 0.5, 200)]),
                   "src": ["a"] * 300 + ["b"] * 200})
ax = sns.histplot(data=df, x="value", bins=15, kde=True, color="teal")
print(len(ax.patches), int(sum(p.get_height() for p in ax.patches)))
print(len(ax.lines), len(ax.lines[0].get_xdata()))
plt.close("all")
g = sns.displot(data=df, x="value", col="src", bins=10, height=3)
print(len(g.axes.flat), [ax.get_title() for ax in g.axes.flat])
print([len(ax.patches) for ax in g.axes.flat])
g.savefig("dist.png")
'''),
    Program("seaborn_boxplot_scatter", r'''
import matplotlib.pyplot as plt
import numpy as np
import pandas as pd
import seaborn as sns

rng = np.random.default_rng(0)
df = pd.DataFrame({"group": np.repeat(["ctrl", "drug_a", "drug_b"], 30),
                   "response": np.concatenate([rng.normal(m, 1, 30) for m in (5, 6.5, 4)]),
                   "dose": np.tile(np.arange(30), 3)})
print(df.groupby("group")["response"].median().round(3).to_dict())
fig, (a1, a2) = plt.subplots(1, 2, figsize=(8, 3))
sns.boxplot(data=df, x="group", y="response", hue="group", ax=a1, legend=False)
sns.scatterplot(data=df, x="dose", y="response", hue="group", style="group", ax=a2)
fig.savefig("box.png")
print([t.get_text() for t in a1.get_xticklabels()])
print([t.get_text() for t in a2.get_legend().get_texts()])
print(len(a2.collections), a2.collections[0].get_offsets().shape)
'''),
]

PLOTLY = [
    Program("plotly_graph_objects", r'''
import plotly.graph_objects as go

fig = go.Figure()
fig.add_trace(go.Scatter(x=[1, 2, 3, 4], y=[10, 11, 9, 14], mode="lines+markers", name="temp"))
fig.add_trace(go.Bar(x=[1, 2, 3, 4], y=[1, 0, 3, 2], name="rain", yaxis="y2"))
fig.update_layout(title_text="Weather", yaxis2={"overlaying": "y", "side": "right"}, width=600, height=400)
d = fig.to_dict()
print([(t["type"], t["name"]) for t in d["data"]])
print(d["layout"]["title"]["text"], d["layout"]["width"], d["layout"]["yaxis2"])
print(list(fig.data[0].y), fig.data[1].marker.color)
fig.update_traces(marker_color="red", selector={"type": "bar"})
print(fig.data[1].marker.color, fig.layout.height)
'''),
    Program("plotly_express_bar", r'''
import pandas as pd
import plotly.express as px

df = pd.DataFrame({"fruit": ["apple", "pear", "apple", "pear", "fig"],
                   "shop": ["north", "north", "south", "south", "south"],
                   "qty": [10, 4, 7, 9, 3]})
fig = px.bar(df, x="fruit", y="qty", color="shop", barmode="group", title="Stock")
print(len(fig.data), [t.name for t in fig.data])
for t in fig.data:
    print(t.name, list(t.x), [int(v) for v in t.y])
print(fig.layout.barmode, fig.layout.title.text, fig.layout.xaxis.title.text)
sc = px.scatter(df, x="qty", y="fruit", size="qty", color="shop")
print(len(sc.data), sc.data[0].mode)
'''),
    Program("plotly_subplots_html", r'''
import plotly.graph_objects as go
from plotly.subplots import make_subplots

fig = make_subplots(rows=2, cols=2, subplot_titles=("a", "b", "c", "d"))
for i, (r, c) in enumerate([(1, 1), (1, 2), (2, 1), (2, 2)]):
    fig.add_trace(go.Scatter(x=list(range(5)), y=[v * (i + 1) for v in range(5)], name=f"s{i}"), row=r, col=c)
print(len(fig.data), [t.xaxis for t in fig.data], [t.yaxis for t in fig.data])
print([round(v, 3) for v in fig.layout.xaxis2.domain], [round(v, 3) for v in fig.layout.yaxis3.domain])
print([a.text for a in fig.layout.annotations])
fig.write_html("fig.html", include_plotlyjs=False, full_html=True, div_id="chart")
html = open("fig.html").read()
print("<html>" in html, 'id="chart"' in html, html.count('"type":"scatter"'))
'''),
]

PILLOW = [
    Program("pil_draw_shapes", r'''
from PIL import Image, ImageDraw

img = Image.new("RGB", (120, 80), "white")
d = ImageDraw.Draw(img)
d.rectangle([10, 10, 49, 39], fill=(255, 0, 0))
d.ellipse([60, 20, 99, 59], fill=(0, 0, 255), outline=(0, 0, 0))
d.line([0, 79, 119, 79], fill=(0, 128, 0), width=1)
img.save("shapes.png")
back = Image.open("shapes.png")
print(back.format, back.size, back.mode)
print(back.getpixel((20, 20)), back.getpixel((80, 40)), back.getpixel((5, 79)), back.getpixel((110, 5)))
colors = sorted(back.getcolors(), reverse=True)
print(len(colors), colors[:3])
red = back.split()[0].point(lambda v: 255 if v > 200 else 0)
print(red.histogram()[255], red.histogram()[0])
print(back.crop((10, 10, 50, 40)).getcolors())
'''),
    Program("pil_filters_resize", r'''
import numpy as np
from PIL import Image, ImageFilter, ImageOps, ImageStat

arr = np.tile(np.arange(0, 256, 2, dtype=np.uint8), (64, 1))
img = Image.fromarray(arr, mode="L")
print(img.size, img.mode, img.getextrema())
small = img.resize((32, 16), Image.Resampling.LANCZOS)
print(small.size, np.asarray(small)[0, :6].tolist())
blur = img.filter(ImageFilter.GaussianBlur(3))
print([round(v, 3) for v in ImageStat.Stat(blur).mean])
edges = img.filter(ImageFilter.FIND_EDGES)
print(int(np.asarray(edges).sum()))
inv = ImageOps.invert(img)
print(inv.getpixel((0, 0)), inv.getpixel((127, 0)))
print(ImageOps.autocontrast(small).getextrema(), ImageOps.equalize(img).histogram()[:4])
'''),
    Program("pil_modes_formats", r'''
import io
import numpy as np
from PIL import Image

rng = np.random.default_rng(0)
arr = rng.integers(0, 256, (40, 60, 3), dtype=np.uint8)
img = Image.fromarray(arr)
gray = img.convert("L")
bw = gray.convert("1")
pal = img.quantize(colors=8, method=Image.Quantize.MEDIANCUT)
print(img.mode, gray.mode, bw.mode, pal.mode, len(pal.getpalette()) // 3)
print(gray.getpixel((0, 0)), round(float(np.asarray(gray).mean()), 3))
for fmt, kw in [("PNG", {}), ("BMP", {}), ("JPEG", {"quality": 90}), ("TIFF", {}), ("WEBP", {"lossless": True})]:
    buf = io.BytesIO()
    img.save(buf, format=fmt, **kw)
    buf.seek(0)
    back = Image.open(buf)
    same = np.array_equal(np.asarray(back.convert("RGB")), arr)
    print(fmt, back.format, back.size, back.mode, same)
img.save("noise.png")
print(Image.open("noise.png").info.get("dpi"), Image.open("noise.png").size)
'''),
    Program("pil_transform_hash", r'''
import hashlib
from PIL import Image, ImageDraw

base = Image.new("RGBA", (50, 30), (0, 0, 0, 0))
ImageDraw.Draw(base).polygon([(0, 0), (49, 0), (0, 29)], fill=(10, 200, 30, 255))
rot = base.rotate(90, expand=True)
flip = base.transpose(Image.Transpose.FLIP_LEFT_RIGHT)
canvas = Image.new("RGBA", (100, 100), (255, 255, 255, 255))
canvas.paste(rot, (5, 5), rot)
canvas.alpha_composite(flip, (45, 60))
print(rot.size, flip.size, canvas.getbbox())
print(hashlib.sha256(canvas.tobytes()).hexdigest()[:16])
print(canvas.getpixel((6, 50)), canvas.getpixel((90, 61)), canvas.getpixel((99, 99)))
thumb = canvas.copy()
thumb.thumbnail((40, 40))
print(thumb.size, canvas.split()[3].getextrema())
'''),
]

OPENCV = [
    Program("cv2_contours_shapes", r'''
import cv2
import numpy as np

cv2.setNumThreads(1)
img = np.zeros((200, 300), np.uint8)
cv2.rectangle(img, (20, 30), (90, 120), 255, -1)
cv2.circle(img, (200, 100), 40, 255, -1)
cv2.fillPoly(img, [np.array([[120, 180], [160, 140], [200, 190]], np.int32)], 255)
_, th = cv2.threshold(img, 127, 255, cv2.THRESH_BINARY)
contours, _ = cv2.findContours(th, cv2.RETR_EXTERNAL, cv2.CHAIN_APPROX_SIMPLE)
info = []
for c in contours:
    x, y, w, h = cv2.boundingRect(c)
    peri = cv2.arcLength(c, True)
    approx = cv2.approxPolyDP(c, 0.02 * peri, True)
    info.append((x, y, w, h, round(cv2.contourArea(c), 1), len(approx)))
for row in sorted(info):
    print(row)
print(int(cv2.countNonZero(th)))
'''),
    Program("cv2_blur_canny", r'''
import cv2
import numpy as np

cv2.setNumThreads(1)
rng = np.random.default_rng(0)
img = np.zeros((120, 160), np.uint8)
img[30:90, 40:120] = 180
noisy = cv2.add(img, rng.integers(0, 40, img.shape, dtype=np.uint8))
blur = cv2.GaussianBlur(noisy, (5, 5), 1.5)
med = cv2.medianBlur(noisy, 5)
edges = cv2.Canny(blur, 50, 150)
print(int(noisy.mean() * 1000), int(blur.mean() * 1000), int(med.mean() * 1000))
print(int(np.count_nonzero(edges)))
ys, xs = np.nonzero(edges)
print(int(xs.min()), int(xs.max()), int(ys.min()), int(ys.max()))
sob = cv2.Sobel(blur, cv2.CV_64F, 1, 0, ksize=3)
print(round(float(np.abs(sob).max()), 2))
'''),
    Program("cv2_imwrite_color", r'''
import cv2
import numpy as np

cv2.setNumThreads(1)
img = np.zeros((64, 96, 3), np.uint8)
img[:, :32] = (255, 0, 0)
img[:, 32:64] = (0, 255, 0)
img[:, 64:] = (0, 0, 255)
cv2.putText(img, "cv", (5, 50), cv2.FONT_HERSHEY_SIMPLEX, 1.0, (255, 255, 255), 2)
print(cv2.imwrite("bands.png", img))
back = cv2.imread("bands.png", cv2.IMREAD_COLOR)
print(back.shape, back.dtype, np.array_equal(back, img))
hsv = cv2.cvtColor(back, cv2.COLOR_BGR2HSV)
print(hsv[60, 10].tolist(), hsv[60, 50].tolist(), hsv[60, 90].tolist())
gray = cv2.imread("bands.png", cv2.IMREAD_GRAYSCALE)
print(gray.shape, sorted(set(gray[60].tolist())))
ok, buf = cv2.imencode(".png", img)
print(ok, np.array_equal(cv2.imdecode(buf, cv2.IMREAD_UNCHANGED), img))
print(int((back == 255).all(axis=2).sum()))
'''),
    Program("cv2_morphology_components", r'''
import cv2
import numpy as np

cv2.setNumThreads(1)
img = np.zeros((100, 100), np.uint8)
for (x, y, r) in [(20, 20, 8), (70, 30, 12), (40, 75, 15), (85, 85, 3)]:
    cv2.circle(img, (x, y), r, 255, -1)
img[50, 10] = 255
kernel = cv2.getStructuringElement(cv2.MORPH_ELLIPSE, (5, 5))
opened = cv2.morphologyEx(img, cv2.MORPH_OPEN, kernel)
n, labels, stats, cents = cv2.connectedComponentsWithStats(opened, connectivity=8)
print(n - 1, sorted(stats[1:, cv2.CC_STAT_AREA].tolist()))
print(sorted((round(float(cx), 1), round(float(cy), 1)) for cx, cy in cents[1:]))
hist = cv2.calcHist([img], [0], None, [2], [0, 256]).ravel().astype(int).tolist()
print(hist, int(cv2.countNonZero(cv2.dilate(img, kernel))), int(cv2.countNonZero(cv2.erode(img, kernel))))
'''),
    Program("cv2_warp_resize", r'''
import cv2
import numpy as np

cv2.setNumThreads(1)
img = np.zeros((100, 100), np.uint8)
img[40:60, 20:80] = 200
M = cv2.getRotationMatrix2D((50, 50), 90, 1.0)
print(M.round(4).tolist())
rot = cv2.warpAffine(img, M, (100, 100), flags=cv2.INTER_NEAREST)
ys, xs = np.nonzero(rot)
print(int(xs.min()), int(xs.max()), int(ys.min()), int(ys.max()), int(np.count_nonzero(rot)))
small = cv2.resize(img, (25, 25), interpolation=cv2.INTER_AREA)
print(small.shape, int(small.sum()))
big = cv2.resize(img, None, fx=2, fy=2, interpolation=cv2.INTER_NEAREST)
print(big.shape, int(np.count_nonzero(big)))
src = np.float32([[0, 0], [99, 0], [0, 99], [99, 99]])
dst = np.float32([[10, 10], [89, 5], [5, 94], [94, 89]])
P = cv2.getPerspectiveTransform(src, dst)
print(P.round(4).tolist())
'''),
]

SKIMAGE = [
    Program("skimage_otsu_regions", r'''
import numpy as np
from skimage import filters, measure

rng = np.random.default_rng(0)
img = rng.normal(0.2, 0.05, (80, 80))
img[10:30, 10:40] += 0.6
img[50:75, 45:70] += 0.5
yy, xx = np.mgrid[:80, :80]
img[(yy - 60) ** 2 + (xx - 15) ** 2 < 64] += 0.55
t = filters.threshold_otsu(img)
print(round(float(t), 4))
labels = measure.label(img > t)
props = sorted(measure.regionprops(labels), key=lambda p: p.area)
print(labels.max(), [int(p.area) for p in props if p.area > 5])
for p in props:
    if p.area > 5:
        print(tuple(round(float(c), 2) for c in p.centroid), p.bbox, round(float(p.eccentricity), 3))
'''),
    Program("skimage_transform", r'''
import numpy as np
from skimage import transform

img = np.zeros((60, 80))
img[20:40, 10:70] = 1.0
r = transform.resize(img, (30, 40), anti_aliasing=True)
print(r.shape, round(float(r.sum()), 3))
s = transform.rescale(img, 0.5, anti_aliasing=False)
print(s.shape, round(float(s.mean()), 4))
rot = transform.rotate(img, 45, resize=True)
print(rot.shape, round(float(rot.sum()), 2))
tf = transform.SimilarityTransform(scale=2, rotation=np.pi / 2, translation=(5, -3))
print(tf.params.round(4).tolist())
print(tf(np.array([[1.0, 0.0], [0.0, 1.0]])).round(4).tolist())
p = transform.pyramid_reduce(img, downscale=2, channel_axis=None)
print(p.shape)
'''),
    Program("skimage_canny_morphology", r'''
import numpy as np
from skimage import feature, morphology

img = np.zeros((64, 64))
img[16:48, 16:48] = 1.0
edges = feature.canny(img, sigma=2)
print(int(edges.sum()), edges.dtype)
mask = img > 0.5
mask[5, 5] = True
mask[60, 2:4] = True
opened = morphology.opening(mask, morphology.disk(2))
print(int(mask.sum()), int(opened.sum()))
dil = morphology.dilation(img, np.ones((3, 3), dtype=bool))
print(int(dil.sum()))
skel = morphology.skeletonize(mask)
print(int(skel.sum()))
corners = feature.corner_peaks(feature.corner_harris(img), min_distance=5, threshold_rel=0.1)
print(sorted(map(tuple, corners.tolist())))
'''),
    Program("skimage_color_exposure", r'''
import numpy as np
from skimage import color, exposure, util

rng = np.random.default_rng(0)
rgb = np.zeros((32, 32, 3))
rgb[..., 0] = np.linspace(0, 1, 32)[None, :]
rgb[..., 1] = np.linspace(0, 1, 32)[:, None]
rgb[..., 2] = 0.25
gray = color.rgb2gray(rgb)
print(gray.shape, round(float(gray.mean()), 4), round(float(gray.max()), 4))
hsv = color.rgb2hsv(rgb)
print(hsv[31, 31].round(4).tolist())
low = gray * 0.3 + 0.1
eq = exposure.equalize_hist(low)
print(round(float(low.min()), 3), round(float(low.max()), 3), round(float(eq.min()), 4), round(float(eq.max()), 4))
stretched = exposure.rescale_intensity(low, out_range=(0, 1))
print(round(float(stretched.min()), 3), round(float(stretched.max()), 3))
u8 = util.img_as_ubyte(stretched)
print(u8.dtype, int(u8.max()), np.histogram(u8, bins=4, range=(0, 256))[0].tolist())
'''),
]

SHAPELY = [
    Program("shapely_polygon_ops", r'''
from shapely.geometry import LineString, Point, Polygon

a = Polygon([(0, 0), (4, 0), (4, 3), (0, 3)])
b = Polygon([(2, 1), (6, 1), (6, 5), (2, 5)])
print(a.area, a.length, a.bounds, a.centroid.coords[0])
inter = a.intersection(b)
print(inter.area, sorted(inter.exterior.coords)[:4])
print(a.union(b).area, a.difference(b).area, a.symmetric_difference(b).area)
print(a.intersects(b), a.contains(Point(1, 1)), a.touches(Polygon([(4, 0), (5, 0), (5, 1)])))
line = LineString([(-1, 1), (5, 1)])
print(line.intersection(a).wkt, round(a.distance(Point(7, 7)), 4))
print(a.exterior.is_ccw, a.convex_hull.equals(a))
'''),
    Program("shapely_buffer_wkt", r'''
from shapely import wkt
from shapely.geometry import LineString, Point

circle = Point(0, 0).buffer(1.0, quad_segs=16)
print(len(circle.exterior.coords), round(circle.area, 5))
road = LineString([(0, 0), (10, 0), (10, 5)])
zone = road.buffer(0.5, cap_style="flat", join_style="mitre")
print(round(zone.area, 4), zone.geom_type)
print(wkt.dumps(zone, rounding_precision=2))
g = wkt.loads("MULTIPOINT ((0 0), (3 4), (6 8))")
print(len(g.geoms), g.convex_hull.wkt, round(g.geoms[0].distance(g.geoms[2]), 3))
print(road.interpolate(0.5, normalized=True).wkt, road.project(Point(10, 2)))
print(road.simplify(0.1).wkt, round(road.length, 3))
'''),
    Program("shapely_strtree_query", r'''
import numpy as np
import shapely
from shapely import STRtree
from shapely.geometry import Point, box

rng = np.random.default_rng(0)
pts = shapely.points(rng.uniform(0, 100, (200, 2)).round(3))
tree = STRtree(pts)
area = box(20, 20, 40, 50)
hits = tree.query(area, predicate="contains")
print(len(hits), sorted(hits.tolist())[:10])
near = tree.nearest(Point(50, 50))
print(int(near), shapely.get_coordinates(pts[near]).tolist())
idx, dists = tree.query_nearest(Point(0, 0), return_distance=True, max_distance=15)
print(idx.tolist(), dists.round(4).tolist())
print(int(shapely.contains(area, pts).sum()), round(float(shapely.area(shapely.buffer(pts[:3], 1.0)).sum()), 4))
'''),
    Program("shapely_validity_union", r'''
from shapely import make_valid
from shapely.geometry import Polygon, box
from shapely.ops import unary_union
from shapely.validation import explain_validity

bowtie = Polygon([(0, 0), (2, 2), (2, 0), (0, 2)])
print(bowtie.is_valid, explain_validity(bowtie))
fixed = make_valid(bowtie)
print(fixed.geom_type, fixed.is_valid, round(fixed.area, 4), len(fixed.geoms))
tiles = [box(i, 0, i + 1.5, 1) for i in range(4)]
merged = unary_union(tiles)
print(merged.geom_type, merged.bounds, merged.area)
holes = box(0, 0, 10, 10).difference(box(2, 2, 4, 4)).difference(box(6, 6, 8, 8))
print(len(holes.interiors), holes.area, holes.is_valid)
'''),
]

PROGRAMS = (PANDAS + PYARROW + OPENPYXL + XLSXWRITER + XLRD + DOCX + TABULATE + YAML + TOML + SQLALCHEMY
            + SKLEARN + LIGHTGBM + JOBLIB + MATPLOTLIB + SEABORN + PLOTLY + PILLOW + OPENCV + SKIMAGE + SHAPELY)
