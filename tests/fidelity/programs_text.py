"""Fidelity corpus: text-processing, web, data and crypto packages and the standard library
as coding-task programs (BigCodeBench, KodCode, APPS/LiveCodeBench, HumanEval-style)."""

from tests.fidelity.program import Program

PROGRAMS = [
    # ------------------------------------------------------------------ bs4
    Program("bs4_find_links", r'''from bs4 import BeautifulSoup

html = """<html><head><title>Links page</title></head><body>
<a href="https://example.com/a" class="ext big">A site</a>
<a href="/local/b">Local B</a>
<p>Some text <a href="mailto:x@example.com">mail me</a> here.</p>
<a name="anchor">no href</a>
</body></html>"""
soup = BeautifulSoup(html, "html.parser")
print(soup.title.string)
for a in soup.find_all("a", href=True):
    print(f"{a['href']} | {a.get_text(strip=True)}")
print("anchors:", len(soup.find_all("a")))
print([a.get("class") for a in soup.find_all("a")])
print(soup.p.get_text())
'''),
    Program("bs4_table_totals", r'''from bs4 import BeautifulSoup

html = """
<table id="sales">
  <thead><tr><th>Region</th><th>Q1</th><th>Q2</th></tr></thead>
  <tbody>
    <tr><td>North</td><td>120</td><td>135</td></tr>
    <tr><td>South</td><td>98</td><td>101</td></tr>
    <tr><td>East</td><td>143</td><td>150</td></tr>
  </tbody>
</table>"""
soup = BeautifulSoup(html, "lxml")
table = soup.find("table", id="sales")
headers = [th.get_text() for th in table.find_all("th")]
rows = []
for tr in table.tbody.find_all("tr"):
    cells = [td.get_text() for td in tr.find_all("td")]
    rows.append(dict(zip(headers, cells)))
for row in rows:
    total = int(row["Q1"]) + int(row["Q2"])
    print(f"{row['Region']:<6}{total:>5}")
print("best:", max(rows, key=lambda r: int(r["Q2"]))["Region"])
'''),
    Program("bs4_css_select", r'''from bs4 import BeautifulSoup

html = """<div class="shop">
  <div class="item" data-id="1"><span class="name">Pen</span><span class="price">1.50</span></div>
  <div class="item sale" data-id="2"><span class="name">Book</span><span class="price">12.00</span></div>
  <div class="item" data-id="3"><span class="name">Lamp</span><span class="price">23.75</span></div>
</div>"""
soup = BeautifulSoup(html, "html.parser")
for item in soup.select("div.item"):
    name = item.select_one("span.name").text
    price = float(item.select_one(".price").text)
    print(item["data-id"], name, f"{price:.2f}")
print("on sale:", [d.select_one(".name").text for d in soup.select("div.item.sale")])
print("total:", sum(float(s.text) for s in soup.select("div.shop > div > span.price")))
print(soup.select_one("div[data-id='3']").get("class"))
'''),
    Program("bs4_modify_tree", r'''from bs4 import BeautifulSoup, Comment

html = "<ul id='todo'><li>write</li><li class='done'>read</li><!-- hidden --><li>test</li></ul>"
soup = BeautifulSoup(html, "html.parser")
ul = soup.find(id="todo")
for li in ul.find_all("li", class_="done"):
    li.decompose()
for c in ul.find_all(string=lambda s: isinstance(s, Comment)):
    c.extract()
new = soup.new_tag("li", attrs={"class": "new"})
new.string = "deploy"
ul.append(new)
ul.li.string = "WRITE"
print(soup.prettify())
print([li.text for li in ul.find_all("li")])
print(str(soup))
'''),
    # ------------------------------------------------------------------ lxml
    Program("lxml_xpath_query", r'''from lxml import etree

xml = b"""<library>
  <book id="b1" year="1999"><title>Alpha</title><price>10.5</price><tag>x</tag><tag>y</tag></book>
  <book id="b2" year="2005"><title>Beta</title><price>7.25</price></book>
  <book id="b3" year="2012"><title>Gamma</title><price>30</price><tag>x</tag></book>
</library>"""
root = etree.fromstring(xml)
print(root.xpath("count(//book)"))
print(root.xpath("//book[@year > 2000]/title/text()"))
print(root.xpath("sum(//price)"))
print(root.xpath("//book[tag='x']/@id"))
for book in root.iterfind("book"):
    print(book.get("id"), book.findtext("title"), len(book.findall("tag")))
print(etree.tostring(root.find("book[@id='b2']")).decode())
'''),
    Program("lxml_html_links", r'''import lxml.html

page = """<html><body>
<h1>News</h1>
<div class="story"><a href="/s/1">First story</a><p>Lead one.</p></div>
<div class="story"><a href="s/2">Second</a><p>Lead <b>two</b>.</p></div>
<a href="https://other.org/x">external</a>
</body></html>"""
doc = lxml.html.fromstring(page)
doc.make_links_absolute("https://news.example.com/index/")
for el, attr, link, pos in doc.iterlinks():
    print(el.tag, attr, link)
for div in doc.xpath("//div[@class='story']"):
    print(repr(div.text_content()))
print(doc.findtext(".//h1"))
'''),
    Program("lxml_build_ns", r'''from lxml import etree

NS = "http://example.com/inventory"
root = etree.Element("{%s}inventory" % NS, nsmap={"inv": NS})
for sku, qty in [("A-1", 5), ("B-7", 0), ("C-3", 12)]:
    item = etree.SubElement(root, "{%s}item" % NS, sku=sku)
    item.text = str(qty)
print(etree.tostring(root, pretty_print=True).decode(), end="")
in_stock = root.xpath("//inv:item[number(.) > 0]/@sku", namespaces={"inv": NS})
print(in_stock)
parsed = etree.fromstring(etree.tostring(root))
print(etree.QName(parsed).localname, len(parsed))
'''),
    # ------------------------------------------------------------------ requests
    Program("requests_prepare", r'''import json
import requests

req = requests.Request(
    "POST", "https://api.example.com/v1/items",
    params={"q": "red shoes", "page": 2},
    json={"name": "Shoe", "size": 42},
    headers={"X-Token": "abc123"},
)
p = req.prepare()
print(p.method)
print(p.url)
for k in sorted(p.headers):
    print(f"{k}: {p.headers[k]}")
print(json.loads(p.body))
form = requests.Request("PUT", "http://example.com/form", data={"a": "1 2", "b": "&"}).prepare()
print(form.body, form.headers["Content-Type"])
'''),
    Program("requests_utils_urls", r'''import requests
from requests.structures import CaseInsensitiveDict
from requests.utils import parse_header_links, requote_uri, urlparse

print(requote_uri("http://example.com/a path/ü?x=1 2"))
u = urlparse("https://user:pw@example.com:8443/p/a/t/h?query=string#frag")
print(u.scheme, u.hostname, u.port, u.path, u.query, u.fragment)
links = parse_header_links('<https://api.example.com/p2>; rel="next", <https://api.example.com/p9>; rel="last"')
for link in links:
    print(link["rel"], link["url"])
h = CaseInsensitiveDict({"Content-Type": "text/html"})
print(h["content-type"], "CONTENT-TYPE" in h, list(h))
print(requests.codes.ok, requests.codes.not_found, requests.codes.teapot)
'''),
    Program("requests_response_json", r'''import requests

r = requests.Response()
r.status_code = 404
r._content = b'{"error": "not found", "code": 404}'
r.headers["Content-Type"] = "application/json"
r.url = "https://example.com/missing"
r.reason = "Not Found"
print(r.ok, r.json()["error"], r.text)
try:
    r.raise_for_status()
except requests.HTTPError as e:
    print("HTTPError:", e)
ok = requests.Response()
ok.status_code = 200
ok._content = "héllo".encode("utf-8")
ok.encoding = "utf-8"
print(ok.ok, ok.text, ok.content)
try:
    requests.get("example.com/no-scheme")
except requests.exceptions.MissingSchema as e:
    print(type(e).__name__, e)
'''),
    # ------------------------------------------------------------------ nltk
    Program("nltk_tokenize_stem", r'''from nltk.tokenize import wordpunct_tokenize
from nltk.stem import PorterStemmer, SnowballStemmer, LancasterStemmer

text = "The runners were running quickly; they'd run 3.5 miles, happily!"
tokens = wordpunct_tokenize(text)
print(tokens)
porter, snow, lanc = PorterStemmer(), SnowballStemmer("english"), LancasterStemmer()
for w in ["running", "runners", "happily", "generously", "relational", "caresses"]:
    print(f"{w:<12}{porter.stem(w):<10}{snow.stem(w):<10}{lanc.stem(w)}")
'''),
    Program("nltk_ngrams_freq", r'''from nltk import FreqDist, ngrams, bigrams
from nltk.probability import ConditionalFreqDist

words = "the cat sat on the mat the cat ate the rat".split()
fd = FreqDist(words)
print(fd.most_common(3))
print(fd["the"], fd.N(), fd.B(), round(fd.freq("cat"), 4))
print(list(bigrams(words[:4])))
tri = FreqDist(ngrams(words, 3))
print(sorted(tri.items())[:3])
cfd = ConditionalFreqDist((w1, w2) for w1, w2 in bigrams(words))
print(sorted(cfd["the"].items()))
print(sorted(cfd.conditions()))
'''),
    Program("nltk_edit_distance", r'''from nltk.metrics.distance import edit_distance, jaccard_distance
from nltk.tokenize import RegexpTokenizer, TweetTokenizer

pairs = [("kitten", "sitting"), ("flaw", "lawn"), ("intention", "execution")]
for a, b in pairs:
    print(a, b, edit_distance(a, b), edit_distance(a, b, transpositions=True))
print(round(jaccard_distance(set("abcde"), set("cdefg")), 4))
print(RegexpTokenizer(r"\w+").tokenize("Hello, world! It's 2024."))
print(TweetTokenizer(preserve_case=False).tokenize("@bob this is SOOO cool :-) #nlp"))
'''),
    # ------------------------------------------------------------------ regex
    Program("regex_fuzzy", r'''import regex

for text in ["hallo world", "help me", "hello", "jello there"]:
    m = regex.search(r"(?:hello){e<=1}", text)
    print(text, "->", m.group() if m else None, m.fuzzy_counts if m else None)
m = regex.fullmatch(r"(?e)(?:colour){s<=1,i<=1}", "color")
print(m is not None)
print(regex.findall(r"\b(?:cat){e<=1}\b", "cat bat cut cast dog"))
'''),
    Program("regex_unicode_props", r'''import regex

s = "Grüße, 世界! naïve café 123 ٣"
print(regex.findall(r"\p{L}+", s))
print(regex.findall(r"\p{Han}", s))
print(regex.findall(r"\p{Nd}", s))
print(len(s), len(regex.findall(r"\X", "e\u0301a\u0308")))
print(regex.match(r"(?i)STRASSE", "straße", flags=regex.FULLCASE) is not None)
print(regex.sub(r"\p{P}", "", s))
'''),
    Program("regex_overlap_recursion", r'''import regex

print(regex.findall(r"\d\d", "12345", overlapped=True))
print(regex.findall(r"(?<=\b\w{2,3}\s)\w+", "ab cd xyz qq longword"))
balanced = r"\((?:[^()]++|(?R))*\)"
print(regex.findall(balanced, "f(a(b)c) g(d) (unclosed (x)"))
m = regex.match(r"(?:(?P<d>\d)-)+", "1-2-3-")
print(m.captures("d"))
print(regex.split(r"(?V1)\b", "one two", flags=regex.V1))
'''),
    # ------------------------------------------------------------------ chardet
    Program("chardet_detect_basic", r'''import chardet

samples = [
    b"plain ascii text only",
    "Ünïcödé text in UTF-8 with ümlauts and ß and more words".encode("utf-8"),
    "\ufeffBOM marked text".encode("utf-8"),
    "hello".encode("utf-16"),
]
for data in samples:
    r = chardet.detect(data)
    print(r["encoding"], type(r["confidence"]).__name__)
'''),
    Program("chardet_detect_legacy", r'''import chardet

texts = {
    "ru": ("Съешь же ещё этих мягких французских булок, да выпей чаю. " * 4, "cp1251"),
    "ja": ("日本語のテキストです。これは文字コードの判定をテストするための文章です。東京は日本の首都です。" * 3, "shift_jis"),
    "el": ("Ξεσκεπάζω την ψυχοφθόρα βδελυγμία. Καλημέρα κόσμε, τι κάνεις σήμερα; " * 4, "iso-8859-7"),
}
for key in sorted(texts):
    text, enc = texts[key]
    data = text.encode(enc)
    r = chardet.detect(data)
    decoded = data.decode(r["encoding"]) if r["encoding"] else None
    print(key, enc, r["encoding"], decoded == text)
'''),
    Program("chardet_universal_detector", r'''from chardet import UniversalDetector

lines = ["Première ligne avec des accents: é è à ç\n", "Deuxième ligne, très française.\n"] * 20
data = "".join(lines).encode("utf-8")
det = UniversalDetector()
fed = 0
for i in range(0, len(data), 64):
    det.feed(data[i:i + 64])
    fed += 1
    if det.done:
        break
det.close()
print(det.result["encoding"], fed > 0)
det.reset()
det.feed(b"just ascii")
det.close()
print(det.result["encoding"])
'''),
    # ------------------------------------------------------------------ natsort
    Program("natsort_files", r'''from natsort import natsorted, ns, index_natsorted, order_by_index

files = ["file10.txt", "file2.txt", "File1.txt", "file1.txt", "file20b.txt", "file20a.txt"]
print(sorted(files))
print(natsorted(files))
print(natsorted(files, alg=ns.IGNORECASE))
idx = index_natsorted(files)
print(idx)
print(order_by_index([f.upper() for f in files], idx))
'''),
    Program("natsort_versions", r'''from natsort import natsorted, ns, natsort_keygen, realsorted

versions = ["1.10.0", "1.2.0", "1.2.10", "1.2.9", "0.9", "1.2.0-rc1"]
print(natsorted(versions))
print(natsorted(versions, reverse=True))
nums = ["a-5.3", "a+2", "a-10", "a3.7", "a1e3"]
print(realsorted(nums))
print(natsorted(nums, alg=ns.FLOAT | ns.SIGNED))
key = natsort_keygen(key=lambda d: d["name"])
rows = [{"name": "img12"}, {"name": "img2"}, {"name": "img1"}]
print([r["name"] for r in sorted(rows, key=key)])
'''),
    Program("natsort_paths", r'''from natsort import natsorted, ns, os_sorted

paths = ["dir/sub10/a.txt", "dir/sub2/b.txt", "dir/sub2/a10.txt", "dir/sub2/a9.txt", "dir2/x.txt"]
print(natsorted(paths, alg=ns.PATH))
print(natsorted(["a b", "a_b", "a10", "a9", "A1"], alg=ns.LOWERCASEFIRST))
print(natsorted([("b", 2), ("a10", 1), ("a2", 3)]))
print(natsorted(["v1", "v1.1", "v1.01", "v1.001"]))
'''),
    # ------------------------------------------------------------------ dateutil
    Program("dateutil_parse", r'''from dateutil import parser
from dateutil.tz import tzoffset, tzutc

for s in ["2024-03-05", "March 5, 2024 14:30", "05/03/2024", "2024-03-05T10:00:00+02:00",
          "Tue, 05 Mar 2024 10:00:00 GMT", "5th of March 2024 at 7pm"]:
    print(repr(s), "->", parser.parse(s, fuzzy=True))
print(parser.parse("05/03/2024", dayfirst=True).date())
dt = parser.isoparse("2024-06-30T23:15:00Z")
print(dt, dt.tzinfo == tzutc())
print(dt.astimezone(tzoffset("IST", 19800)))
try:
    parser.parse("not a date at all")
except parser.ParserError as e:
    print("ParserError:", e)
'''),
    Program("dateutil_relativedelta", r'''from datetime import date, datetime
from dateutil.relativedelta import relativedelta, MO, FR

d = date(2024, 1, 31)
for n in range(1, 5):
    print(d + relativedelta(months=n))
print(date(2024, 2, 29) + relativedelta(years=1))
born, today = date(1990, 8, 17), date(2024, 3, 5)
age = relativedelta(today, born)
print(age.years, age.months, age.days)
print(date(2024, 3, 5) + relativedelta(weekday=MO(+1)))
print(date(2024, 3, 1) + relativedelta(day=31, weekday=FR(-1)))
print(datetime(2024, 1, 1) + relativedelta(hours=+36, minutes=-5))
'''),
    Program("dateutil_rrule", r'''from datetime import datetime
from dateutil.rrule import rrule, rruleset, rrulestr, MONTHLY, WEEKLY, DAILY, MO, WE, FR

start = datetime(2024, 1, 1, 9, 0)
for dt in rrule(WEEKLY, count=5, byweekday=(MO, WE, FR), dtstart=start):
    print(dt.strftime("%a %Y-%m-%d %H:%M"))
last_fridays = rrule(MONTHLY, count=4, byweekday=FR(-1), dtstart=start)
print([d.date().isoformat() for d in last_fridays])
rs = rruleset()
rs.rrule(rrule(DAILY, count=7, dtstart=start))
rs.exdate(datetime(2024, 1, 3, 9, 0))
print(len(list(rs)), rs[2])
r = rrulestr("FREQ=YEARLY;BYMONTH=2;BYMONTHDAY=29;COUNT=3", dtstart=start)
print([d.year for d in r])
'''),
    # ------------------------------------------------------------------ pytz
    Program("pytz_localize_convert", r'''from datetime import datetime
import pytz

ny = pytz.timezone("America/New_York")
tokyo = pytz.timezone("Asia/Tokyo")
dt = ny.localize(datetime(2024, 7, 4, 12, 0))
print(dt, dt.tzname())
print(dt.astimezone(tokyo), dt.astimezone(pytz.utc))
winter = ny.localize(datetime(2024, 1, 15, 12, 0))
print(winter.utcoffset(), winter.tzname(), winter.dst())
print(pytz.utc.localize(datetime(2024, 3, 10, 7, 30)).astimezone(ny))
'''),
    Program("pytz_dst_edges", r'''from datetime import datetime, timedelta
import pytz

tz = pytz.timezone("Europe/Berlin")
before = tz.localize(datetime(2024, 3, 31, 1, 30))
after = tz.normalize(before + timedelta(hours=1))
print(before, "->", after)
try:
    tz.localize(datetime(2024, 3, 31, 2, 30), is_dst=None)
except pytz.exceptions.NonExistentTimeError as e:
    print("NonExistentTimeError", e)
try:
    tz.localize(datetime(2024, 10, 27, 2, 30), is_dst=None)
except pytz.exceptions.AmbiguousTimeError as e:
    print("AmbiguousTimeError", e)
print(tz.localize(datetime(2024, 10, 27, 2, 30), is_dst=True).tzname(),
      tz.localize(datetime(2024, 10, 27, 2, 30), is_dst=False).tzname())
'''),
    Program("pytz_zone_table", r'''from datetime import datetime
import pytz

moment = pytz.utc.localize(datetime(2024, 12, 1, 15, 0))
zones = ["Pacific/Auckland", "Asia/Kolkata", "Europe/London", "America/Sao_Paulo", "America/Los_Angeles"]
for name in sorted(zones, key=lambda z: moment.astimezone(pytz.timezone(z)).utcoffset()):
    local = moment.astimezone(pytz.timezone(name))
    print(f"{name:<22}{local:%Y-%m-%d %H:%M %Z %z}")
print("Europe/Paris" in pytz.all_timezones_set, "Mars/Olympus" in pytz.all_timezones_set)
print(pytz.country_timezones("nz"))
try:
    pytz.timezone("Mars/Olympus")
except pytz.UnknownTimeZoneError as e:
    print("UnknownTimeZoneError", e)
'''),
    # ------------------------------------------------------------------ Faker
    Program("faker_seeded_people", r'''from faker import Faker

Faker.seed(0)
fake = Faker()
for _ in range(5):
    print(fake.name(), "|", fake.email(), "|", fake.job())
print(fake.address())
'''),
    Program("faker_seed_instance", r'''from faker import Faker

fake = Faker("de_DE")
fake.seed_instance(0)
first = [fake.name() for _ in range(3)]
fake.seed_instance(0)
again = [fake.name() for _ in range(3)]
print(first)
print(first == again)
print(fake.city(), fake.postcode())
'''),
    Program("faker_misc_values", r'''from faker import Faker

fake = Faker()
fake.seed_instance(1234)
print(fake.word(), fake.sentence(nb_words=6))
print(fake.pyint(min_value=0, max_value=100), fake.pybool())
print(fake.ipv4(), fake.uuid4())
print(fake.color_name(), fake.hex_color())
print(fake.random_element(elements=("a", "b", "c")), fake.random_int(1, 6))
print(fake.bothify("??-####"), fake.lexify("????"), fake.numerify("###-###"))
'''),
]

PROGRAMS += [
    # ------------------------------------------------------------------ Flask
    Program("flask_json_api", r'''from flask import Flask, jsonify, request

app = Flask(__name__)
items = {1: {"id": 1, "name": "apple", "qty": 3}}

@app.get("/items")
def list_items():
    return jsonify(sorted(items.values(), key=lambda i: i["id"]))

@app.post("/items")
def create_item():
    data = request.get_json()
    new_id = max(items) + 1
    items[new_id] = {"id": new_id, **data}
    return jsonify(items[new_id]), 201

@app.get("/items/<int:item_id>")
def get_item(item_id):
    if item_id not in items:
        return jsonify(error="not found"), 404
    return jsonify(items[item_id])

client = app.test_client()
r = client.post("/items", json={"name": "pear", "qty": 7})
print(r.status_code, r.get_json())
r = client.get("/items")
print(r.status_code, r.content_type, r.get_json())
r = client.get("/items/9")
print(r.status_code, r.get_json())
print(client.get("/items/abc").status_code)
'''),
    Program("flask_forms_redirect", r'''from flask import Flask, redirect, request, url_for

app = Flask(__name__)

@app.route("/search")
def search():
    q = request.args.get("q", "")
    page = request.args.get("page", 1, type=int)
    tags = request.args.getlist("tag")
    return f"q={q!r} page={page} tags={tags}"

@app.route("/login", methods=["GET", "POST"])
def login():
    if request.method == "POST":
        user = request.form["user"]
        return redirect(url_for("hello", name=user))
    return "login form"

@app.route("/hello/<name>")
def hello(name):
    return f"Hello, {name}!"

c = app.test_client()
print(c.get("/search?q=flask+test&page=3&tag=a&tag=b").get_data(as_text=True))
r = c.post("/login", data={"user": "ana"})
print(r.status_code, r.headers["Location"])
r = c.post("/login", data={"user": "ben"}, follow_redirects=True)
print(r.status_code, r.get_data(as_text=True), len(r.history))
print(c.get("/login").get_data(as_text=True))
print(c.delete("/login").status_code)
with app.test_request_context():
    print(url_for("search", q="x y", page=2))
'''),
    Program("flask_error_handlers", r'''from flask import Flask, abort, jsonify

app = Flask(__name__)

class Conflict(Exception):
    pass

@app.errorhandler(404)
def not_found(e):
    return jsonify(error="missing", description=e.description), 404

@app.errorhandler(Conflict)
def conflict(e):
    return jsonify(error="conflict", detail=str(e)), 409

@app.route("/user/<int:uid>")
def user(uid):
    if uid > 10:
        abort(404, description=f"user {uid} does not exist")
    if uid == 0:
        raise Conflict("uid 0 is reserved")
    return {"uid": uid}

@app.route("/forbidden")
def forbidden():
    abort(403)

c = app.test_client()
for path in ["/user/3", "/user/42", "/user/0", "/nowhere"]:
    r = c.get(path)
    print(path, r.status_code, r.get_json())
r = c.get("/forbidden")
print(r.status_code, r.mimetype, "Forbidden" in r.get_data(as_text=True))
'''),
    Program("flask_blueprint_session", r'''from flask import Blueprint, Flask, g, session

app = Flask(__name__)
app.secret_key = "fixed-test-key"
api = Blueprint("api", __name__, url_prefix="/api")

@api.before_request
def load_user():
    g.user = "guest"

@api.route("/count")
def count():
    session["n"] = session.get("n", 0) + 1
    return {"n": session["n"], "user": g.user}

@app.after_request
def add_header(resp):
    resp.headers["X-App"] = "demo"
    return resp

app.register_blueprint(api)
with app.test_client() as c:
    for _ in range(3):
        r = c.get("/api/count")
        print(r.get_json(), r.headers["X-App"])
    with c.session_transaction() as s:
        print("session n =", s["n"])
print(sorted(r.rule for r in app.url_map.iter_rules()))
'''),
    Program("flask_templates", r'''from flask import Flask, render_template_string

app = Flask(__name__)
TEMPLATE = """<h1>{{ title|upper }}</h1>
<ul>
{%- for user in users %}
  <li class="{{ loop.cycle('odd', 'even') }}">{{ loop.index }}. {{ user.name }} ({{ user.age }})</li>
{%- endfor %}
</ul>
<p>{{ note }}</p>
{% if users|length > 2 %}many{% else %}few{% endif %} users, avg age {{ '%.1f'|format(avg) }}"""

@app.route("/")
def index():
    users = [{"name": "Ana", "age": 31}, {"name": "Bo", "age": 25}, {"name": "Cy", "age": 40}]
    return render_template_string(TEMPLATE, title="team", users=users,
                                  note="<script>alert(1)</script>",
                                  avg=sum(u["age"] for u in users) / len(users))

print(app.test_client().get("/").get_data(as_text=True))
'''),
    # ------------------------------------------------------------------ pydantic
    Program("pydantic_model_basics", r'''from datetime import date
from typing import Optional
from pydantic import BaseModel, Field

class Address(BaseModel):
    city: str
    zip_code: str = Field(alias="zip")

class User(BaseModel):
    id: int
    name: str
    signup: date
    tags: list[str] = []
    score: float = 0.0
    address: Optional[Address] = None

u = User(id="42", name="Ana", signup="2024-03-05", score="9.5",
         address={"city": "Lisbon", "zip": "1000-001"})
print(u)
print(u.id + 1, u.signup.year, u.address.zip_code)
print(u.model_dump())
print(u.model_dump_json())
print(u.model_dump(by_alias=True, exclude={"tags"}))
v = u.model_copy(update={"name": "Bea"})
print(v.name, u.name, v == u)
print(sorted(User.model_fields))
'''),
    Program("pydantic_errors_caught", r'''from pydantic import BaseModel, PositiveInt, ValidationError

class Order(BaseModel):
    order_id: PositiveInt
    quantity: int
    customer: str

for payload in [{"order_id": 5, "quantity": "3", "customer": "x"},
                {"order_id": -1, "quantity": "three"},
                {"order_id": "abc", "quantity": 2.5, "customer": None}]:
    try:
        print("ok:", Order(**payload))
    except ValidationError as e:
        print("errors:", e.error_count())
        for err in e.errors():
            print("  ", err["loc"], err["type"], "-", err["msg"])
'''),
    Program("pydantic_validators", r'''from pydantic import BaseModel, Field, ValidationError, computed_field, field_validator, model_validator

class Rect(BaseModel):
    width: float = Field(gt=0)
    height: float = Field(gt=0)
    label: str = Field(default="rect", min_length=1, max_length=10)

    @field_validator("label")
    @classmethod
    def clean_label(cls, v: str) -> str:
        return v.strip().lower()

    @model_validator(mode="after")
    def not_too_thin(self):
        if max(self.width, self.height) / min(self.width, self.height) > 10:
            raise ValueError("aspect ratio above 10")
        return self

    @computed_field
    @property
    def area(self) -> float:
        return self.width * self.height

print(Rect(width=3, height=4, label="  BOX "))
print(Rect(width=2, height=5).model_dump())
for bad in [dict(width=0, height=1), dict(width=1, height=50), dict(width=1, height=1, label="x" * 11)]:
    try:
        Rect(**bad)
    except ValidationError as e:
        print(e.errors()[0]["type"], "|", e.errors()[0]["msg"])
'''),
    Program("pydantic_json_schema", r'''import json
from enum import Enum
from pydantic import BaseModel, TypeAdapter

class Color(str, Enum):
    red = "red"
    blue = "blue"

class Item(BaseModel):
    name: str
    color: Color = Color.red
    sizes: list[int] = []

class Cart(BaseModel):
    owner: str
    items: list[Item]

cart = Cart.model_validate_json('{"owner": "z", "items": [{"name": "hat", "color": "blue", "sizes": ["1", 2]}, {"name": "cap"}]}')
print(cart)
print(cart.items[0].color is Color.blue, cart.items[0].sizes)
print(json.dumps(Cart.model_json_schema(), indent=1, sort_keys=True))
ta = TypeAdapter(list[int])
print(ta.validate_python(["1", 2, 3.0]))
print(ta.dump_json([1, 2]))
'''),
    Program("pydantic_uncaught_error", r'''from pydantic import BaseModel, conint

class Config(BaseModel):
    host: str
    port: conint(ge=1, le=65535)
    debug: bool = False

print(Config(host="localhost", port=8080, debug="yes"))
Config(host="localhost", port=70000, debug="maybe")
print("unreachable")
'''),
    # ------------------------------------------------------------------ cryptography
    Program("cryptography_hashes", r'''from cryptography.hazmat.primitives import hashes

data = b"The quick brown fox jumps over the lazy dog"
for algo in [hashes.SHA256(), hashes.SHA512(), hashes.SHA3_256(), hashes.BLAKE2b(64), hashes.MD5()]:
    h = hashes.Hash(algo)
    h.update(data)
    print(f"{algo.name:<10}{algo.digest_size:>4} {h.finalize().hex()}")
inc = hashes.Hash(hashes.SHA256())
for chunk in [data[:10], data[10:30], data[30:]]:
    inc.update(chunk)
copy = inc.copy()
print(inc.finalize() == copy.finalize())
'''),
    Program("cryptography_hmac_kdf", r'''from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import hashes, hmac
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from cryptography.hazmat.primitives.kdf.pbkdf2 import PBKDF2HMAC

key = b"secret-key"
h = hmac.HMAC(key, hashes.SHA256())
h.update(b"message")
tag = h.finalize()
print(tag.hex())
v = hmac.HMAC(key, hashes.SHA256())
v.update(b"message")
v.verify(tag)
print("verified")
bad = hmac.HMAC(key, hashes.SHA256())
bad.update(b"messagE")
try:
    bad.verify(tag)
except InvalidSignature:
    print("InvalidSignature")
okm = HKDF(algorithm=hashes.SHA256(), length=32, salt=b"salt", info=b"ctx").derive(b"input key material")
print(okm.hex())
kdf = PBKDF2HMAC(algorithm=hashes.SHA256(), length=16, salt=b"NaCl", iterations=1000)
print(kdf.derive(b"password").hex())
'''),
    Program("cryptography_aes_modes", r'''from cryptography.hazmat.primitives import padding
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

key = bytes(range(32))
iv = bytes(range(16, 32))
msg = b"attack at dawn, bring snacks"
padder = padding.PKCS7(128).padder()
padded = padder.update(msg) + padder.finalize()
enc = Cipher(algorithms.AES(key), modes.CBC(iv)).encryptor()
ct = enc.update(padded) + enc.finalize()
print("cbc", len(ct), ct.hex())
dec = Cipher(algorithms.AES(key), modes.CBC(iv)).decryptor()
unpadder = padding.PKCS7(128).unpadder()
print(unpadder.update(dec.update(ct) + dec.finalize()) + unpadder.finalize())
ctr = Cipher(algorithms.AES(key), modes.CTR(iv)).encryptor()
print("ctr", (ctr.update(msg) + ctr.finalize()).hex())
gcm = AESGCM(key)
sealed = gcm.encrypt(b"\x00" * 12, msg, b"header")
print("gcm", sealed.hex())
print(gcm.decrypt(b"\x00" * 12, sealed, b"header"))
'''),
    Program("cryptography_ed25519_sign", r'''from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey

sk = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
pk = sk.public_key()
raw = pk.public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
print(raw.hex())
sig = sk.sign(b"hello")
print(sig.hex())
pk.verify(sig, b"hello")
try:
    pk.verify(sig, b"hellp")
except InvalidSignature:
    print("tampered message rejected")
print(pk.public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode(), end="")
a = X25519PrivateKey.from_private_bytes(bytes([1] * 32))
b = X25519PrivateKey.from_private_bytes(bytes([2] * 32))
s1, s2 = a.exchange(b.public_key()), b.exchange(a.public_key())
print(s1 == s2, s1.hex())
'''),
    Program("cryptography_keywrap_constant_time", r'''from cryptography.hazmat.primitives import constant_time
from cryptography.hazmat.primitives.keywrap import aes_key_unwrap, aes_key_wrap, InvalidUnwrap

kek = bytes.fromhex("000102030405060708090A0B0C0D0E0F")
key = bytes.fromhex("00112233445566778899AABBCCDDEEFF")
wrapped = aes_key_wrap(kek, key)
print(wrapped.hex())
print(aes_key_unwrap(kek, wrapped) == key)
try:
    aes_key_unwrap(kek, wrapped[:-1] + bytes([wrapped[-1] ^ 1]))
except InvalidUnwrap:
    print("InvalidUnwrap")
print(constant_time.bytes_eq(b"abc", b"abc"), constant_time.bytes_eq(b"abc", b"abd"))
'''),
    # ------------------------------------------------------------------ pycryptodome
    Program("pycryptodome_hashes", r'''from Crypto.Hash import BLAKE2b, HMAC, MD5, SHA1, SHA256, SHA3_256, SHA512

data = b"pycryptodome hashing demo"
for mod in [MD5, SHA1, SHA256, SHA512, SHA3_256]:
    print(f"{mod.__name__.split('.')[-1]:<9}{mod.new(data).hexdigest()}")
print("BLAKE2b  ", BLAKE2b.new(digest_bits=256, data=data).hexdigest())
mac = HMAC.new(b"key", digestmod=SHA256)
mac.update(data)
tag = mac.hexdigest()
print("HMAC     ", tag)
check = HMAC.new(b"key", data, digestmod=SHA256)
check.hexverify(tag)
try:
    HMAC.new(b"kez", data, digestmod=SHA256).hexverify(tag)
except ValueError as e:
    print("ValueError:", e)
'''),
    Program("pycryptodome_aes", r'''from Crypto.Cipher import AES
from Crypto.Util.Padding import pad, unpad

key = b"0123456789abcdef"
iv = b"fedcba9876543210"
plain = b"Sixteen byte msg and then some more bytes"
ecb = AES.new(key, AES.MODE_ECB)
ct = ecb.encrypt(pad(plain, AES.block_size))
print("ecb", ct.hex())
print(unpad(AES.new(key, AES.MODE_ECB).decrypt(ct), AES.block_size))
cbc = AES.new(key, AES.MODE_CBC, iv=iv)
ct2 = cbc.encrypt(pad(plain, 16, style="pkcs7"))
print("cbc", ct2.hex())
print(unpad(AES.new(key, AES.MODE_CBC, iv=iv).decrypt(ct2), 16))
ctr = AES.new(key, AES.MODE_CTR, nonce=b"12345678")
print("ctr", ctr.encrypt(plain).hex())
try:
    unpad(b"x" * 16, 16)
except ValueError as e:
    print("ValueError:", e)
'''),
    Program("pycryptodome_kdf_numbers", r'''from Crypto.Hash import SHA256
from Crypto.Protocol.KDF import PBKDF2, scrypt, HKDF
from Crypto.Util.number import GCD, bytes_to_long, inverse, isPrime, long_to_bytes

print(PBKDF2("password", b"salt", dkLen=20, count=1000, hmac_hash_module=SHA256).hex())
print(scrypt("password", b"salt", key_len=16, N=2**10, r=8, p=1).hex())
print(HKDF(b"master", 16, b"salt", SHA256).hex())
print([n for n in range(90, 120) if isPrime(n)])
print(inverse(17, 3120), GCD(462, 1071))
n = bytes_to_long(b"hi!")
print(n, long_to_bytes(n), long_to_bytes(1, blocksize=4))
'''),
    # ------------------------------------------------------------------ psutil
    Program("psutil_self_process", r'''import os
import psutil

p = psutil.Process()
print(p.pid == os.getpid())
print(p.is_running())
print(p.status() in (psutil.STATUS_RUNNING, psutil.STATUS_SLEEPING))
print(os.path.samefile(p.cwd(), os.getcwd()))
print(p.memory_info().rss > 0)
print(p.cpu_times().user >= 0)
print(psutil.pid_exists(os.getpid()))
print(p.children() == [])
'''),
    Program("psutil_system_facts", r'''import psutil

print(psutil.cpu_count() >= 1)
vm = psutil.virtual_memory()
print(vm.total > 0, 0 <= vm.percent <= 100, vm.available <= vm.total)
print(psutil.disk_usage(".").total > 0)
print(psutil.boot_time() > 0)
print(sorted(vm._fields)[:3])
print(psutil.POSIX, psutil.LINUX)
'''),
    Program("psutil_errors_helpers", r'''import threading
import psutil
from psutil._common import bytes2human

for n in [0, 1023, 1024, 10**6, 3 * 2**30, 2**50]:
    print(n, bytes2human(n))
try:
    psutil.Process(2**31 - 1)
except psutil.NoSuchProcess as e:
    print("NoSuchProcess", e.pid)
print(issubclass(psutil.NoSuchProcess, psutil.Error))
stop = threading.Event()
threads = [threading.Thread(target=stop.wait) for _ in range(3)]
for t in threads:
    t.start()
print(psutil.Process().num_threads() >= 4)
stop.set()
for t in threads:
    t.join()
print(psutil.STATUS_ZOMBIE, psutil.STATUS_SLEEPING)
'''),
]

PROGRAMS += [
    # ------------------------------------------------------------------ collections
    Program("collections_counter_words", r'''import sys
from collections import Counter

text = sys.stdin.read()
words = [w.strip(".,!?;:").lower() for w in text.split()]
counts = Counter(w for w in words if w)
for word, n in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:5]:
    print(word, n)
letters = Counter(c for c in text.lower() if c.isalpha())
print(letters.most_common(3))
a, b = Counter("abracadabra"), Counter("alakazam")
print(sorted((a & b).items()), sorted((a - b).items()), (a + b).total())
''', stdin="The cat and the hat. The cat sat!\nA hat, a cat; and THE end?\n"),
    Program("collections_deque_bfs", r'''import sys
from collections import deque

def main():
    data = sys.stdin.read().split()
    h, w = int(data[0]), int(data[1])
    grid = data[2:2 + h]
    start = goal = None
    for r in range(h):
        for c in range(w):
            if grid[r][c] == "S":
                start = (r, c)
            elif grid[r][c] == "G":
                goal = (r, c)
    dist = {start: 0}
    q = deque([start])
    while q:
        r, c = q.popleft()
        for dr, dc in ((1, 0), (-1, 0), (0, 1), (0, -1)):
            nr, nc = r + dr, c + dc
            if 0 <= nr < h and 0 <= nc < w and grid[nr][nc] != "#" and (nr, nc) not in dist:
                dist[(nr, nc)] = dist[(r, c)] + 1
                q.append((nr, nc))
    print(dist.get(goal, -1))
    d = deque(range(5), maxlen=5)
    d.rotate(2)
    d.append(99)
    print(list(d))

main()
''', stdin="5 6\nS..#..\n.#.#.#\n.#...#\n.####.\n.....G\n"),
    Program("collections_lru_ordereddict", r'''from collections import OrderedDict, namedtuple

class LRUCache:
    def __init__(self, capacity):
        self.capacity = capacity
        self.data = OrderedDict()

    def get(self, key):
        if key not in self.data:
            return -1
        self.data.move_to_end(key)
        return self.data[key]

    def put(self, key, value):
        self.data[key] = value
        self.data.move_to_end(key)
        if len(self.data) > self.capacity:
            self.data.popitem(last=False)

cache = LRUCache(2)
ops = [("put", 1, 1), ("put", 2, 2), ("get", 1), ("put", 3, 3), ("get", 2), ("put", 4, 4),
       ("get", 1), ("get", 3), ("get", 4)]
out = []
for op in ops:
    if op[0] == "put":
        cache.put(op[1], op[2])
    else:
        out.append(cache.get(op[1]))
print(out, list(cache.data.items()))
Point = namedtuple("Point", "x y", defaults=[0])
p = Point(3)
print(p, p._replace(y=5), p._asdict(), Point._fields)
'''),
    Program("collections_defaultdict_chainmap", r'''from collections import ChainMap, defaultdict

edges = [("a", "b"), ("a", "c"), ("b", "d"), ("c", "d"), ("d", "e")]
graph = defaultdict(list)
indeg = defaultdict(int)
for u, v in edges:
    graph[u].append(v)
    indeg[v] += 1
print(dict(graph))
print(sorted(indeg.items()))
nested = defaultdict(lambda: defaultdict(int))
for word in ["apple", "avocado", "banana", "blueberry", "cherry", "apricot"]:
    nested[word[0]][len(word)] += 1
print({k: dict(v) for k, v in sorted(nested.items())})
defaults = {"color": "red", "size": "M"}
user = {"size": "L"}
cfg = ChainMap(user, defaults)
print(cfg["color"], cfg["size"], len(cfg), sorted(cfg))
child = cfg.new_child({"color": "blue"})
print(child["color"], child.parents["color"])
'''),
    # ------------------------------------------------------------------ itertools
    Program("itertools_combinatorics", r'''from itertools import accumulate, combinations, combinations_with_replacement, groupby, permutations, product

print(list(permutations("abc", 2)))
print(list(combinations(range(5), 3))[:4], len(list(combinations(range(10), 4))))
print(list(combinations_with_replacement("xy", 3)))
print(["".join(p) for p in product("01", repeat=3)])
print(list(accumulate([3, 1, 4, 1, 5, 9, 2, 6], max)))
print(list(accumulate([1, 2, 3, 4, 5], lambda a, b: a * b, initial=1)))
data = "aaabccddddde"
print([(k, len(list(g))) for k, g in groupby(data)])
coins = [1, 2, 5]
ways = sum(1 for combo in product(range(11), range(6), range(3)) if sum(c * n for c, n in zip(coins, combo)) == 10)
print("ways to make 10:", ways)
'''),
    Program("itertools_iterators", r'''from itertools import chain, compress, count, cycle, dropwhile, islice, pairwise, repeat, starmap, takewhile, tee, zip_longest

print(list(islice(count(10, 5), 4)))
print(list(islice(cycle("AB"), 5)))
print(list(chain([1, 2], (3, 4), "ab")), list(chain.from_iterable([[1], [2, 3]])))
print(list(zip_longest("abc", [1], fillvalue="-")))
print(list(compress("abcdef", [1, 0, 1, 0, 1, 1])))
print(list(takewhile(lambda x: x < 5, [1, 4, 6, 2])), list(dropwhile(lambda x: x < 5, [1, 4, 6, 2])))
print(list(starmap(pow, [(2, 5), (3, 2)])), list(repeat("x", 3)))
print([b - a for a, b in pairwise([1, 4, 9, 16, 25])])
a, b = tee(range(4))
next(b)
print(list(zip(a, b)))
'''),
    # ------------------------------------------------------------------ functools
    Program("functools_cache_reduce", r'''import sys
from functools import cache, lru_cache, partial, reduce, total_ordering, cmp_to_key

sys.setrecursionlimit(10000)

@lru_cache(maxsize=None)
def fib(n):
    return n if n < 2 else fib(n - 1) + fib(n - 2)

print(fib(200))
print(fib.cache_info())

@cache
def grid_paths(r, c):
    if r == 0 or c == 0:
        return 1
    return grid_paths(r - 1, c) + grid_paths(r, c - 1)

print(grid_paths(16, 16))
print(reduce(lambda a, b: a * b, range(1, 11)), reduce(lambda acc, x: acc + [acc[-1] + x], [1, 2, 3], [0]))
base2 = partial(int, base=2)
print(base2("101101"), base2.func.__name__, base2.keywords)

@total_ordering
class Version:
    def __init__(self, s):
        self.parts = tuple(map(int, s.split(".")))
    def __eq__(self, o):
        return self.parts == o.parts
    def __lt__(self, o):
        return self.parts < o.parts
    def __repr__(self):
        return "Version(" + ".".join(map(str, self.parts)) + ")"

vs = [Version(s) for s in ["1.10", "1.2", "1.2.1", "0.9"]]
print(sorted(vs), Version("2.0") >= Version("1.9"))
print(sorted(["b", "A", "c", "B"], key=cmp_to_key(lambda x, y: (x.lower() > y.lower()) - (x.lower() < y.lower()) or (x > y) - (x < y))))
'''),
    Program("functools_singledispatch", r'''from decimal import Decimal
from functools import singledispatch, singledispatchmethod, cached_property, wraps

@singledispatch
def describe(obj):
    return f"object:{type(obj).__name__}"

@describe.register
def _(obj: int):
    return f"int:{obj:+d}"

@describe.register
def _(obj: list):
    return "list[" + ", ".join(describe(x) for x in obj) + "]"

@describe.register(float)
@describe.register(Decimal)
def _(obj):
    return f"number:{obj:.2f}"

print(describe(5), describe(2.5), describe(Decimal("1.005")), describe("s"), describe([1, 2.0, None]))

class Circle:
    def __init__(self, r):
        self.r = r
        self.computed = 0
    @cached_property
    def area(self):
        self.computed += 1
        return round(3.14159 * self.r ** 2, 3)
    @singledispatchmethod
    def scale(self, k):
        raise NotImplementedError(type(k).__name__)
    @scale.register
    def _(self, k: int):
        return Circle(self.r * k)

c = Circle(2)
print(c.area, c.area, c.computed, c.scale(3).r)
try:
    c.scale("x")
except NotImplementedError as e:
    print("NotImplementedError:", e)
'''),
    # ------------------------------------------------------------------ heapq
    Program("heapq_dijkstra", r'''import heapq
import sys

def main():
    input = sys.stdin.readline
    n, m = map(int, input().split())
    adj = [[] for _ in range(n + 1)]
    for _ in range(m):
        u, v, w = map(int, input().split())
        adj[u].append((v, w))
        adj[v].append((u, w))
    src = int(input())
    INF = float("inf")
    dist = [INF] * (n + 1)
    prev = [0] * (n + 1)
    dist[src] = 0
    pq = [(0, src)]
    while pq:
        d, u = heapq.heappop(pq)
        if d > dist[u]:
            continue
        for v, w in adj[u]:
            if d + w < dist[v]:
                dist[v] = d + w
                prev[v] = u
                heapq.heappush(pq, (dist[v], v))
    print(" ".join(str(d) if d < INF else "INF" for d in dist[1:]))
    path, node = [], n
    while node:
        path.append(node)
        node = prev[node] if node != src else 0
    print("->".join(map(str, reversed(path))))

main()
''', stdin="6 8\n1 2 7\n1 3 9\n1 6 14\n2 3 10\n2 4 15\n3 4 11\n3 6 2\n4 5 6\n1\n"),
    Program("heapq_merge_median", r'''import heapq

print(list(heapq.merge([1, 4, 9], [2, 3, 10], [0, 5])))
nums = [5, 1, 8, 3, 9, 2, 7, 4, 6]
print(heapq.nlargest(3, nums), heapq.nsmallest(2, nums))
people = [("ann", 31), ("bob", 25), ("cid", 40), ("dee", 25)]
print(heapq.nsmallest(2, people, key=lambda p: p[1]))
lo, hi, medians = [], [], []
for x in nums:
    heapq.heappush(lo, -x)
    heapq.heappush(hi, -heapq.heappop(lo))
    if len(hi) > len(lo):
        heapq.heappush(lo, -heapq.heappop(hi))
    medians.append(-lo[0] if len(lo) > len(hi) else (-lo[0] + hi[0]) / 2)
print(medians)
h = [7, 3, 5]
heapq.heapify(h)
print(heapq.heappushpop(h, 1), heapq.heapreplace(h, 10), sorted(h))
'''),
    Program("heapq_task_scheduler", r'''import heapq
import itertools

class Scheduler:
    def __init__(self):
        self.heap = []
        self.counter = itertools.count()
        self.entries = {}

    def add(self, name, priority):
        if name in self.entries:
            self.remove(name)
        entry = [priority, next(self.counter), name]
        self.entries[name] = entry
        heapq.heappush(self.heap, entry)

    def remove(self, name):
        self.entries.pop(name)[-1] = None

    def pop(self):
        while self.heap:
            priority, _, name = heapq.heappop(self.heap)
            if name is not None:
                del self.entries[name]
                return name, priority
        raise KeyError("pop from empty scheduler")

s = Scheduler()
for name, pr in [("write", 3), ("test", 2), ("deploy", 5), ("lint", 2), ("review", 1)]:
    s.add(name, pr)
s.add("deploy", 0)
s.remove("lint")
while s.entries:
    print(*s.pop())
try:
    s.pop()
except KeyError as e:
    print("KeyError", e)
'''),
    # ------------------------------------------------------------------ bisect
    Program("bisect_lis", r'''import bisect
import sys

def main():
    n = int(sys.stdin.readline())
    a = list(map(int, sys.stdin.readline().split()))
    assert len(a) == n
    tails, idx, parent = [], [], [-1] * n
    for i, x in enumerate(a):
        j = bisect.bisect_left(tails, x)
        if j == len(tails):
            tails.append(x)
            idx.append(i)
        else:
            tails[j] = x
            idx[j] = i
        parent[i] = idx[j - 1] if j else -1
    seq, k = [], idx[-1]
    while k != -1:
        seq.append(a[k])
        k = parent[k]
    print(len(tails))
    print(*reversed(seq))

main()
''', stdin="10\n3 10 2 1 20 4 6 7 30 5\n"),
    Program("bisect_grades_insort", r'''import bisect

def grade(score, breakpoints=(60, 70, 80, 90), grades="FDCBA"):
    return grades[bisect.bisect(breakpoints, score)]

print([grade(s) for s in [33, 99, 77, 70, 89, 90, 100, 60]])
sorted_list = []
for x in [5, 1, 4, 1, 5, 9, 2, 6]:
    bisect.insort(sorted_list, x)
print(sorted_list)
print(bisect.bisect_left(sorted_list, 5), bisect.bisect_right(sorted_list, 5))
records = [("ann", 3), ("bob", 7), ("cid", 12)]
print(bisect.bisect_left(records, 7, key=lambda r: r[1]))
def count_in_range(arr, lo, hi):
    return bisect.bisect_right(arr, hi) - bisect.bisect_left(arr, lo)
print(count_in_range(sorted_list, 2, 5))
'''),
    # ------------------------------------------------------------------ math / numbers
    Program("math_functions", r'''import math

print(math.gcd(48, 180, 30), math.lcm(4, 6, 10), math.isqrt(10**20 + 12345))
print(math.comb(52, 5), math.perm(10, 3), math.factorial(20))
print(math.prod([1, 2, 3, 4, 5]), math.dist((0, 0), (3, 4)), math.hypot(5, 12))
print(f"{math.pi:.12f} {math.e:.12f} {math.tau:.6f}")
print(math.floor(-2.5), math.ceil(-2.5), math.trunc(-2.7), round(2.5), round(3.5), round(-0.5))
print(math.sqrt(2), math.log(1000, 10), math.log2(1024), math.exp(1))
print(math.isclose(0.1 + 0.2, 0.3), 0.1 + 0.2 == 0.3, math.fsum([0.1] * 10), sum([0.1] * 10))
print(math.inf > 10**308, math.isnan(float("nan")), math.copysign(3, -0.0))
print(math.degrees(math.atan2(1, 1)), round(math.sin(math.pi / 6), 12))
print(divmod(-17, 5), -17 // 5, -17 % 5, math.fmod(-17, 5))
'''),
    Program("math_sieve_primes", r'''import sys

def sieve(n):
    is_p = bytearray([1]) * (n + 1)
    is_p[0:2] = b"\x00\x00"
    for i in range(2, int(n ** 0.5) + 1):
        if is_p[i]:
            is_p[i * i::i] = bytearray(len(range(i * i, n + 1, i)))
    return [i for i in range(n + 1) if is_p[i]]

def factorize(n):
    f, d = {}, 2
    while d * d <= n:
        while n % d == 0:
            f[d] = f.get(d, 0) + 1
            n //= d
        d += 1
    if n > 1:
        f[n] = f.get(n, 0) + 1
    return f

t = int(input())
for _ in range(t):
    n = int(input())
    ps = sieve(n)
    print(len(ps), ps[-5:], " * ".join(f"{p}^{e}" if e > 1 else str(p) for p, e in factorize(n).items()))
''', stdin="3\n100\n1000000\n360\n"),
    Program("fractions_exact", r'''from fractions import Fraction

h = sum(Fraction(1, k) for k in range(1, 11))
print(h, float(h))
print(Fraction("3.1415926535").limit_denominator(1000), Fraction(0.1), Fraction("0.1"))
def egyptian(fr):
    out = []
    while fr.numerator:
        d = -(-fr.denominator // fr.numerator)
        out.append(Fraction(1, d))
        fr -= Fraction(1, d)
    return out
print(" + ".join(str(f) for f in egyptian(Fraction(7, 15))))
def continued(fr):
    terms = []
    while True:
        q = fr.numerator // fr.denominator
        terms.append(q)
        fr -= q
        if fr == 0:
            return terms
        fr = 1 / fr
print(continued(Fraction(415, 93)))
x = Fraction(2, 3)
print(x ** 3, x * 6, x > Fraction(3, 5), round(Fraction(7, 2)), x.as_integer_ratio())
'''),
    Program("decimal_money", r'''from decimal import Decimal, ROUND_HALF_EVEN, ROUND_HALF_UP, InvalidOperation, getcontext, localcontext

prices = [Decimal("19.99"), Decimal("5.01"), Decimal("0.10")]
subtotal = sum(prices)
tax = (subtotal * Decimal("0.0825")).quantize(Decimal("0.01"), rounding=ROUND_HALF_UP)
print(subtotal, tax, subtotal + tax)
print(Decimal("2.675").quantize(Decimal("0.01"), ROUND_HALF_EVEN), Decimal("2.665").quantize(Decimal("0.01"), ROUND_HALF_EVEN))
print(Decimal(0.1), Decimal("0.1") * 3 == Decimal("0.3"))
with localcontext() as ctx:
    ctx.prec = 50
    print(Decimal(2).sqrt())
    print(Decimal(1) / Decimal(7))
print(getcontext().prec, Decimal(1) / Decimal(3))
print(Decimal("1.30").normalize(), Decimal("-0"), Decimal("1e3").to_integral_value(), Decimal("12.345").as_tuple())
try:
    Decimal("abc")
except InvalidOperation as e:
    print("InvalidOperation", type(e).__name__)
'''),
    Program("statistics_summary", r'''import statistics as st

data = [2.5, 3.1, 4.7, 3.1, 5.0, 6.2, 3.9, 4.4, 3.1, 5.8]
print(st.mean(data), st.fmean(data), st.median(data), st.mode(data))
print(st.median_low([1, 3, 5, 7]), st.median_high([1, 3, 5, 7]), st.multimode("aabbbccdd"))
print(round(st.stdev(data), 6), round(st.pstdev(data), 6), round(st.variance(data), 6))
print(st.quantiles(data, n=4), st.harmonic_mean([40, 60]), st.geometric_mean([1, 10, 100]))
x = [1, 2, 3, 4, 5]
y = [2.1, 3.9, 6.2, 7.8, 10.1]
slope, intercept = st.linear_regression(x, y)
print(round(slope, 6), round(intercept, 6), round(st.correlation(x, y), 6))
nd = st.NormalDist(mu=100, sigma=15)
print(round(nd.cdf(130), 6), round(nd.inv_cdf(0.975), 4), nd.overlap(st.NormalDist(110, 15)))
try:
    st.mean([])
except st.StatisticsError as e:
    print("StatisticsError:", e)
'''),
    Program("random_seeded", r'''import random

random.seed(42)
print(random.random(), random.randint(1, 100), random.randrange(0, 50, 5))
items = list(range(10))
random.shuffle(items)
print(items)
print(random.choice("abcdef"), random.sample(range(100), 5), random.choices("xyz", weights=[5, 1, 1], k=8))
print(round(random.gauss(0, 1), 10), round(random.uniform(1, 2), 10), random.getrandbits(64))
rng = random.Random("seed-string")
print([rng.randint(1, 6) for _ in range(10)])
state = rng.getstate()
a = rng.random()
rng.setstate(state)
print(a == rng.random())
'''),
    Program("random_monte_carlo", r'''import random

rng = random.Random(2024)
inside = sum(1 for _ in range(100000) if rng.random() ** 2 + rng.random() ** 2 <= 1)
print("pi ~", 4 * inside / 100000)
walk, pos = [], 0
for _ in range(20):
    pos += rng.choice((-1, 1))
    walk.append(pos)
print(walk, max(walk), min(walk))
def reservoir(stream, k, rng):
    res = []
    for i, x in enumerate(stream):
        if i < k:
            res.append(x)
        else:
            j = rng.randint(0, i)
            if j < k:
                res[j] = x
    return res
print(reservoir(range(1000), 5, rng))
'''),
    # ------------------------------------------------------------------ re
    Program("re_log_parse", r'''import re
from collections import defaultdict

LOG = """\
2024-03-05 10:00:01 INFO  [web] GET /index.html 200 512
2024-03-05 10:00:02 WARN  [db] slow query took 1532ms
2024-03-05 10:00:03 INFO  [web] POST /api/login 401 87
2024-03-05 10:00:04 ERROR [web] GET /api/items 500 0
2024-03-05 10:00:05 INFO  [web] GET /index.html 304 0
"""
pat = re.compile(r"^(?P<date>\S+) (?P<time>\S+) (?P<level>\w+)\s+\[(?P<comp>\w+)\] (?P<msg>.*)$", re.M)
levels = defaultdict(int)
for m in pat.finditer(LOG):
    levels[m["level"]] += 1
print(dict(sorted(levels.items())))
req = re.compile(r"(GET|POST) (\S+) (\d{3}) (\d+)")
for method, path, status, size in req.findall(LOG):
    print(f"{method:<5}{path:<16}{status} {int(size):>4}")
print(re.sub(r"(\d+)ms", lambda m: f"{int(m[1]) / 1000:.2f} seconds", LOG.splitlines()[1]))
print(re.split(r"[\s,;]+", "a, b;c  d,,e"), re.fullmatch(r"[\w.+-]+@[\w-]+\.[\w.]+", "first.last+tag@mail.example.org") is not None)
print(re.sub(r"(?P<first>\w+) (?P<last>\w+)", r"\g<last>, \g<first>", "Ada Lovelace"), re.escape("1+1=2?"))
'''),
    Program("re_tokenizer_calc", r'''import re

TOKEN = re.compile(r"\s*(?:(?P<num>\d+\.?\d*)|(?P<op>[-+*/()]))")

def tokenize(s):
    pos, out = 0, []
    s = s.rstrip()
    while pos < len(s):
        m = TOKEN.match(s, pos)
        if not m:
            bad = len(s) - len(s[pos:].lstrip())
            raise SyntaxError(f"bad char at {bad}: {s[bad]!r}")
        out.append(("num", float(m["num"])) if m["num"] else ("op", m["op"]))
        pos = m.end()
    return out

def parse(tokens):
    def expr(i):
        v, i = term(i)
        while i < len(tokens) and tokens[i][1] in "+-":
            op = tokens[i][1]
            r, i = term(i + 1)
            v = v + r if op == "+" else v - r
        return v, i
    def term(i):
        v, i = factor(i)
        while i < len(tokens) and tokens[i][1] in ("*", "/"):
            op = tokens[i][1]
            r, i = factor(i + 1)
            v = v * r if op == "*" else v / r
        return v, i
    def factor(i):
        kind, val = tokens[i]
        if val == "(":
            v, i = expr(i + 1)
            return v, i + 1
        if val == "-":
            v, i = factor(i + 1)
            return -v, i
        return val, i + 1
    return expr(0)[0]

for line in ["1 + 2 * 3", "(1 + 2) * 3", "10 / 4 - -2", "2 * (3 + 4) * 5 / 7", "3 $ 4"]:
    try:
        print(line, "=", parse(tokenize(line)))
    except SyntaxError as e:
        print(line, "->", e)
'''),
    # ------------------------------------------------------------------ json
    Program("json_roundtrip", r'''import json
from dataclasses import asdict, dataclass
from datetime import date

@dataclass
class Event:
    name: str
    day: date
    tags: list

class Encoder(json.JSONEncoder):
    def default(self, o):
        if isinstance(o, date):
            return {"__date__": o.isoformat()}
        if isinstance(o, set):
            return sorted(o)
        return super().default(o)

def hook(d):
    return date.fromisoformat(d["__date__"]) if "__date__" in d else d

ev = Event("launch", date(2024, 5, 17), ["a", "b"])
s = json.dumps({"event": asdict(ev), "ids": {3, 1, 2}, "ratio": 0.5, "none": None, "ü": "ñ"}, cls=Encoder, sort_keys=True)
print(s)
back = json.loads(s, object_hook=hook)
print(back["event"]["day"], type(back["event"]["day"]).__name__)
print(json.dumps({"b": [1, 2, {"c": True}], "a": "x"}, indent=2, sort_keys=True, ensure_ascii=False))
print(json.dumps([1.0, 1e100, float("inf")], separators=(",", ":")))
try:
    json.dumps({"x": object.__new__(type("Opaque", (), {"__repr__": lambda self: "Opaque()"}))})
except TypeError as e:
    print("TypeError:", e)
'''),
    Program("json_decode_error", r'''import json
import sys

raw = sys.stdin.read()
records = []
for lineno, line in enumerate(raw.splitlines(), 1):
    print(f"line {lineno}: parsing")
    records.append(json.loads(line))
print(records)
''', stdin='{"a": 1}\n[1, 2, 3]\n{"b": 2,}\n'),
    # ------------------------------------------------------------------ csv
    Program("csv_in_memory", r'''import csv
import io

raw = """name,dept,salary
"Smith, Jane",eng,120000
Bob,sales,70000
"O""Neil",eng,95000
Ann,sales,82000
"""
rows = list(csv.DictReader(io.StringIO(raw)))
by_dept = {}
for r in rows:
    by_dept.setdefault(r["dept"], []).append(int(r["salary"]))
for dept, sal in sorted(by_dept.items()):
    print(dept, len(sal), sum(sal) // len(sal))
out = io.StringIO()
w = csv.DictWriter(out, fieldnames=["name", "salary"], extrasaction="ignore", lineterminator="\n")
w.writeheader()
w.writerows(sorted(rows, key=lambda r: -int(r["salary"])))
print(out.getvalue(), end="")
buf = io.StringIO()
csv.writer(buf, delimiter=";", quoting=csv.QUOTE_NONNUMERIC, lineterminator="\n").writerow(["a;b", 1.5, 'q"x'])
print(buf.getvalue(), end="")
print(csv.Sniffer().sniff("a|b|c\n1|2|3\n").delimiter)
'''),
    Program("csv_file_report", r'''import csv

with open("scores.csv", "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f)
    w.writerow(["student", "subject", "score"])
    w.writerows([["zoë", "math", 91], ["liam", "math", 78], ["zoë", "art", 85],
                 ["liam", "art", 92], ["mia", "math", 66], ["mia", "art", 74]])
totals = {}
with open("scores.csv", newline="", encoding="utf-8") as f:
    for row in csv.DictReader(f):
        totals.setdefault(row["student"], []).append(int(row["score"]))
with open("report.csv", "w", newline="", encoding="utf-8") as f:
    w = csv.writer(f)
    w.writerow(["student", "avg", "best"])
    for s, sc in sorted(totals.items(), key=lambda kv: -sum(kv[1])):
        w.writerow([s, f"{sum(sc) / len(sc):.1f}", max(sc)])
with open("report.csv", "rb") as f:
    print(f.read())
'''),
    Program("csv_given_file", r'''import csv
import statistics

with open("data/temps.csv", newline="") as f:
    reader = csv.reader(f)
    header = next(reader)
    rows = [(city, float(t)) for city, t in reader]
print(header)
by_city = {}
for city, t in rows:
    by_city.setdefault(city, []).append(t)
for city in sorted(by_city):
    ts = by_city[city]
    print(f"{city:<8} n={len(ts)} mean={statistics.mean(ts):.2f} max={max(ts)}")
''', files={"data/temps.csv": b"city,temp\nOslo,-3.5\nRome,14.0\nOslo,1.25\nRome,16.5\nLima,19.0\n"}),
    # ------------------------------------------------------------------ dataclasses / enum / typing / abc
    Program("dataclasses_inventory", r'''from dataclasses import asdict, astuple, dataclass, field, fields, replace, FrozenInstanceError

@dataclass(order=True)
class Item:
    sort_index: float = field(init=False, repr=False)
    name: str
    price: float
    qty: int = 0
    tags: list[str] = field(default_factory=list)

    def __post_init__(self):
        self.sort_index = self.price * self.qty

@dataclass(frozen=True, slots=True)
class Point:
    x: int
    y: int

    def __add__(self, o):
        return Point(self.x + o.x, self.y + o.y)

inv = [Item("bolt", 0.25, 400), Item("gear", 12.5, 3, ["metal"]), Item("belt", 8.0, 10)]
for it in sorted(inv, reverse=True):
    print(it, it.sort_index)
print(asdict(inv[1]), astuple(inv[2]))
print([f.name for f in fields(Item)], replace(inv[0], qty=1))
p = Point(1, 2) + Point(3, 4)
print(p, p == Point(4, 6), hash(p) == hash(Point(4, 6)))
try:
    p.x = 10
except FrozenInstanceError as e:
    print("FrozenInstanceError:", e)
'''),
    Program("enum_kinds", r'''from enum import Enum, Flag, IntEnum, StrEnum, auto, unique

@unique
class Color(Enum):
    RED = 1
    GREEN = 2
    BLUE = 3

class Prio(IntEnum):
    LOW = auto()
    MID = auto()
    HIGH = auto()

class Perm(Flag):
    R = auto()
    W = auto()
    X = auto()

class Method(StrEnum):
    GET = auto()
    POST = auto()

print(Color.RED, repr(Color.GREEN), Color(3).name, Color["BLUE"].value, list(Color))
print(Prio.HIGH > Prio.LOW, Prio.MID + 1, sorted([Prio.HIGH, Prio.LOW]), max(Prio).name)
rw = Perm.R | Perm.W
print(rw, Perm.R in rw, Perm.X in rw, list(rw), bool(Perm(0)))
print(Method.GET, Method.POST == "post", f"{Method.GET}".upper())
try:
    Color(7)
except ValueError as e:
    print("ValueError:", e)
try:
    @unique
    class Bad(Enum):
        A = 1
        B = 1
except ValueError as e:
    print("ValueError:", e)
'''),
    Program("typing_protocols", r'''from typing import Generic, NamedTuple, Optional, Protocol, TypedDict, TypeVar, get_type_hints, runtime_checkable

T = TypeVar("T")

class Stack(Generic[T]):
    def __init__(self) -> None:
        self.items: list[T] = []
    def push(self, x: T) -> None:
        self.items.append(x)
    def pop(self) -> Optional[T]:
        return self.items.pop() if self.items else None
    def __repr__(self) -> str:
        return f"Stack({self.items})"

@runtime_checkable
class Sized(Protocol):
    def size(self) -> int: ...

class Box:
    def size(self) -> int:
        return 3

class Movie(TypedDict, total=False):
    title: str
    year: int

class Pair(NamedTuple):
    left: int
    right: int = 0

s: Stack[int] = Stack()
for i in range(3):
    s.push(i * i)
print(s, s.pop(), s)
print(isinstance(Box(), Sized), isinstance(42, Sized))
m: Movie = {"title": "Heat"}
print(m, Movie.__required_keys__, sorted(Movie.__optional_keys__))
print(Pair(1), Pair(1, 2)._asdict(), get_type_hints(Pair))
def f(a: int, b: "list[str]" = None) -> dict[str, int]: ...
print(get_type_hints(f))
'''),
    Program("abc_shapes", r'''import math
from abc import ABC, abstractmethod

class Shape(ABC):
    @abstractmethod
    def area(self) -> float: ...

    @property
    @abstractmethod
    def name(self) -> str: ...

    def describe(self):
        return f"{self.name} with area {self.area():.3f}"

class Circle(Shape):
    name = "circle"
    def __init__(self, r):
        self.r = r
    def area(self):
        return math.pi * self.r ** 2

class Square(Shape):
    def __init__(self, s):
        self.s = s
    @property
    def name(self):
        return "square"
    def area(self):
        return self.s ** 2

class Half(Shape):
    def area(self):
        return 0.5

for shape in sorted([Circle(1.5), Square(2), Circle(0.5)], key=lambda s: s.area()):
    print(shape.describe())
try:
    Half()
except TypeError as e:
    print("TypeError:", e)
print(issubclass(Square, Shape), sorted(Shape.__abstractmethods__))
'''),
    # ------------------------------------------------------------------ contextlib / operator / string / textwrap
    Program("contextlib_tools", r'''import io
from contextlib import ExitStack, contextmanager, redirect_stdout, suppress, nullcontext, closing

@contextmanager
def tag(name, log):
    log.append(f"<{name}>")
    try:
        yield name.upper()
    except ZeroDivisionError:
        log.append("handled")
    finally:
        log.append(f"</{name}>")

log = []
with tag("a", log) as t1, tag("b", log) as t2:
    log.append(t1 + t2)
    1 / 0
print(log)
with suppress(KeyError, IndexError):
    {}["missing"]
print("suppressed")
buf = io.StringIO()
with redirect_stdout(buf):
    print("captured line")
print(repr(buf.getvalue()))

class Resource:
    def __init__(self, n):
        self.n = n
    def close(self):
        print("close", self.n)

with ExitStack() as stack:
    res = [stack.enter_context(closing(Resource(i))) for i in range(3)]
    stack.callback(print, "callback runs first")
    print("using", [r.n for r in res])
with nullcontext(5) as v:
    print("nullcontext", v)
'''),
    Program("operator_sorting", r'''from operator import add, attrgetter, itemgetter, methodcaller, mul, neg
from functools import reduce
from collections import namedtuple

Emp = namedtuple("Emp", "name dept age")
staff = [Emp("ana", "eng", 31), Emp("bo", "ops", 25), Emp("cy", "eng", 25), Emp("di", "ops", 40)]
print([e.name for e in sorted(staff, key=attrgetter("dept", "age"))])
rows = [("x", 3, 2.0), ("y", 1, 9.5), ("z", 3, 0.5)]
print(sorted(rows, key=itemgetter(1, 2)), itemgetter(0, 2)(rows[1]))
print(list(map(methodcaller("replace", "a", "4"), ["banana", "java"])))
print(reduce(add, range(10)), reduce(mul, range(1, 6)), list(map(neg, [1, -2])))
print(sorted(staff, key=lambda e: (-e.age, e.name))[0])
'''),
    Program("string_formatting", r'''import string

t = string.Template("Dear $name, you owe ${amount} dollars. $$5 fee.")
print(t.substitute(name="Ana", amount="12.50"))
print(t.safe_substitute(name="Bo"))
print(string.capwords("hello   wORLD from python"), string.ascii_lowercase[:5], string.digits, string.punctuation[:6])
print(f"|{'left':<10}|{'mid':^10}|{'right':>10}|{3.14159:08.3f}|{255:#x}|{255:b}|{1234567:,}|{0.256:.1%}|")
print("{0}-{1}-{0}".format("a", "b"), "{name:*^9}".format(name="mid"), format(12.0, "g"), format(1e-7, "g"))
print(f"{'é':>3}|{-42:+06d}|{42: d}|{1e6:.2e}|{7!r}|{'x'!r:>5}")
fmt = string.Formatter()
print([f for _, f, _, _ in fmt.parse("a {x} b {y!r:>4} c")])
def caesar(s, k):
    lo, up = string.ascii_lowercase, string.ascii_uppercase
    return s.translate(str.maketrans(lo + up, lo[k:] + lo[:k] + up[k:] + up[:k]))
print(caesar("Hello, World!", 3), caesar(caesar("Hello, World!", 3), 23))
'''),
    Program("textwrap_layout", r'''import textwrap

text = ("Python is a high-level, general-purpose programming language. Its design philosophy "
        "emphasizes code readability with the use of significant indentation.")
print(textwrap.fill(text, width=40))
print(textwrap.wrap(text, width=30)[:3])
print(textwrap.shorten(text, width=50, placeholder=" [...]"))
code = """
    def f():
        return 1
"""
print(textwrap.dedent(code).strip())
print(textwrap.indent("line one\nline two\n\nline four", "> "))
print(textwrap.fill(text, width=36, initial_indent="* ", subsequent_indent="  ", max_lines=3))
'''),
    Program("difflib_compare", r'''import difflib

a = """def add(a, b):
    return a + b

print(add(1, 2))
""".splitlines(keepends=True)
b = """def add(a, b, c=0):
    return a + b + c

print(add(1, 2))
print(add(1, 2, 3))
""".splitlines(keepends=True)
print("".join(difflib.unified_diff(a, b, fromfile="old.py", tofile="new.py")), end="")
sm = difflib.SequenceMatcher(None, "kitten sitting", "sitting kitten")
print(round(sm.ratio(), 4), sm.get_matching_blocks()[:2])
for op in difflib.SequenceMatcher(None, "abcdef", "abXdeYf").get_opcodes():
    print(op)
words = ["apple", "apply", "ample", "maple", "happy", "applet"]
print(difflib.get_close_matches("appel", words, n=3, cutoff=0.6))
print(list(difflib.ndiff(["one\n", "two\n"], ["one\n", "tWo\n"])))
'''),
    Program("unicodedata_text", r'''import unicodedata

s = "Crème Brûlée — naïve café Ωmega ½ ﬁ 𝔘"
for ch in "èΩ½ﬁ—𝔘":
    print(f"U+{ord(ch):04X} {unicodedata.name(ch)} {unicodedata.category(ch)}")
def strip_accents(t):
    return "".join(c for c in unicodedata.normalize("NFD", t) if unicodedata.category(c) != "Mn")
print(strip_accents(s))
print(unicodedata.normalize("NFKC", s))
nfc, nfd = unicodedata.normalize("NFC", "é"), unicodedata.normalize("NFD", "é")
print(len(nfc), len(nfd), nfc == nfd, unicodedata.is_normalized("NFC", nfd))
print(unicodedata.numeric("½"), unicodedata.digit("٣"), unicodedata.lookup("SNOWMAN"), unicodedata.east_asian_width("世"))
print("ß".upper(), "ǅ".lower(), "İ".lower().encode("utf-8"), "straße".casefold() == "STRASSE".casefold())
'''),
]

PROGRAMS += [
    # ------------------------------------------------------------------ binary data
    Program("struct_records", r'''import struct

fmt = "<I16sdH"
print(struct.calcsize(fmt), struct.calcsize(">I16sdH"), struct.calcsize("@bi"))
records = [(1, b"alpha", 3.25, 7), (2, "βeta".encode("utf-8"), -1.5, 65535)]
blob = b"".join(struct.pack(fmt, *r) for r in records)
print(len(blob), blob[:24].hex())
for rid, name, val, flags in struct.iter_unpack(fmt, blob):
    print(rid, name.rstrip(b"\0").decode("utf-8"), val, flags)
print(struct.pack(">h", -2).hex(), struct.pack("<h", -2).hex(), struct.unpack(">f", bytes.fromhex("40490fdb"))[0])
header = struct.Struct("!4sBB")
print(header.unpack(b"RIFF\x01\x02"), header.size)
try:
    struct.pack("B", 256)
except struct.error as e:
    print("struct.error:", e)
'''),
    Program("hashlib_digests", r'''import hashlib
import hmac

data = b"hello world"
for name in ["md5", "sha1", "sha256", "sha512", "sha3_256", "blake2b", "blake2s"]:
    print(f"{name:<9}{hashlib.new(name, data).hexdigest()}")
print(hashlib.shake_128(data).hexdigest(16))
h = hashlib.sha256()
for chunk in (b"hello", b" ", b"world"):
    h.update(chunk)
print(h.hexdigest() == hashlib.sha256(data).hexdigest(), h.digest_size, h.block_size)
print(hashlib.pbkdf2_hmac("sha256", b"password", b"salt", 1000).hex())
print(hashlib.blake2b(data, digest_size=16, key=b"k", person=b"app").hexdigest())
tag = hmac.new(b"secret", data, hashlib.sha256).hexdigest()
print(tag, hmac.compare_digest(tag, hmac.new(b"secret", data, "sha256").hexdigest()))
print(sorted(a for a in hashlib.algorithms_guaranteed if a.startswith("sha3")))
'''),
    Program("base64_encodings", r'''import base64
import binascii

raw = bytes(range(250, 256)) + b"Hello?>"
print(base64.b64encode(raw), base64.urlsafe_b64encode(raw))
print(base64.b32encode(b"abc"), base64.b16encode(b"\x00\xffhi"), base64.a85encode(b"hello"), base64.b85encode(b"hello"))
print(base64.b64decode("SGVsbG8sIFdvcmxkIQ=="), base64.b64decode(b"SGk", validate=False) if False else base64.b64decode(b"SGk="))
print(binascii.hexlify(b"\x01\xab", "-"), binascii.crc32(b"hello"), binascii.unhexlify("cafe"))
try:
    base64.b64decode("abc$", validate=True)
except binascii.Error as e:
    print("binascii.Error:", e)
try:
    base64.b64decode("abcde")
except binascii.Error as e:
    print("binascii.Error:", e)
'''),
    Program("zlib_compress", r'''import zlib

text = ("to be or not to be that is the question " * 50).encode()
for level in (1, 6, 9):
    c = zlib.compress(text, level)
    print(level, len(text), len(c), zlib.decompress(c) == text)
print(zlib.crc32(text), zlib.adler32(text), format(zlib.crc32(b"abc"), "08x"))
co = zlib.compressobj(9, zlib.DEFLATED, -15)
raw = co.compress(text) + co.flush()
do = zlib.decompressobj(-15)
out = b"".join(do.decompress(raw[i:i + 50]) for i in range(0, len(raw), 50)) + do.flush()
print(len(raw), out == text)
try:
    zlib.decompress(b"not compressed")
except zlib.error as e:
    print("zlib.error:", e)
'''),
    Program("gzip_files", r'''import gzip
import io

lines = [f"record {i:03d}: {'x' * (i % 7)}\n" for i in range(200)]
with gzip.GzipFile("log.txt.gz", "wb", mtime=0) as f:
    for line in lines:
        f.write(line.encode())
with open("log.txt.gz", "rb") as f:
    head = f.read(4)
print(head.hex())
with gzip.open("log.txt.gz", "rt", encoding="utf-8") as f:
    back = f.readlines()
print(len(back), back[5], back == lines, end="\n")
blob = gzip.compress(b"payload" * 100, mtime=0)
print(len(blob), blob[:10].hex(), gzip.decompress(blob)[:14])
try:
    gzip.decompress(b"plain bytes")
except gzip.BadGzipFile as e:
    print("BadGzipFile:", e)
with gzip.GzipFile(fileobj=io.BytesIO(blob)) as g:
    print(g.read(7))
'''),
    Program("zipfile_archive", r'''import io
import zipfile

with zipfile.ZipFile("bundle.zip", "w", compression=zipfile.ZIP_DEFLATED) as z:
    for name, body in [("readme.txt", "hello zip\n" * 3), ("src/app.py", "print('app')\n"), ("data/n.csv", "a,b\n1,2\n")]:
        info = zipfile.ZipInfo(name, date_time=(2024, 1, 2, 3, 4, 6))
        info.compress_type = zipfile.ZIP_DEFLATED
        z.writestr(info, body)
with zipfile.ZipFile("bundle.zip") as z:
    print(z.testzip())
    for info in sorted(z.infolist(), key=lambda i: i.filename):
        print(f"{info.filename:<12}{info.file_size:>4} {info.date_time}")
    print(z.read("src/app.py").decode(), end="")
    z.extract("data/n.csv", "out")
with open("out/data/n.csv") as f:
    print(repr(f.read()))
mem = io.BytesIO()
with zipfile.ZipFile(mem, "w") as z:
    z.writestr(zipfile.ZipInfo("a.txt", (2020, 1, 1, 0, 0, 0)), b"AAA")
print(len(mem.getvalue()), zipfile.is_zipfile(mem))
try:
    zipfile.ZipFile(io.BytesIO(b"not a zip"))
except zipfile.BadZipFile as e:
    print("BadZipFile:", e)
'''),
    Program("tarfile_archive", r'''import io
import tarfile

buf = io.BytesIO()
with tarfile.open(fileobj=buf, mode="w:gz") as tar:
    for name, body in [("proj/README", b"read me\n"), ("proj/src/main.c", b"int main(){return 0;}\n")]:
        info = tarfile.TarInfo(name)
        info.size = len(body)
        info.mtime = 1700000000
        info.mode = 0o644
        tar.addfile(info, io.BytesIO(body))
    d = tarfile.TarInfo("proj/empty")
    d.type = tarfile.DIRTYPE
    d.mode = 0o755
    d.mtime = 1700000000
    tar.addfile(d)
buf.seek(0)
with tarfile.open(fileobj=buf, mode="r:*") as tar:
    for m in tar.getmembers():
        print(f"{m.name:<16}{m.size:>4} {oct(m.mode)} {'dir' if m.isdir() else 'file'} {m.mtime}")
    print(tar.extractfile("proj/src/main.c").read())
    tar.extractall("unpacked")
with open("unpacked/proj/README") as f:
    print(repr(f.read()))
with tarfile.open("archive.tar", "w") as tar:
    tar.add("unpacked/proj/README", arcname="README")
with tarfile.open("archive.tar") as tar:
    print(tar.getnames())
'''),
    # ------------------------------------------------------------------ sqlite3
    Program("sqlite3_memory_queries", r'''import sqlite3

con = sqlite3.connect(":memory:")
cur = con.cursor()
cur.executescript("""
CREATE TABLE dept(id INTEGER PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE emp(id INTEGER PRIMARY KEY, name TEXT, dept_id INTEGER REFERENCES dept(id), salary REAL);
""")
cur.executemany("INSERT INTO dept(name) VALUES (?)", [("eng",), ("ops",), ("hr",)])
cur.executemany("INSERT INTO emp(name, dept_id, salary) VALUES (?, ?, ?)",
                [("ana", 1, 120.5), ("bo", 1, 99.0), ("cy", 2, 80.0), ("di", 2, 85.5), ("ed", 1, 130.0)])
con.commit()
for row in cur.execute("""SELECT d.name, COUNT(e.id), ROUND(AVG(e.salary), 2), MAX(e.salary)
                          FROM dept d LEFT JOIN emp e ON e.dept_id = d.id
                          GROUP BY d.id ORDER BY d.name"""):
    print(row)
for row in cur.execute("""SELECT name, salary, RANK() OVER (PARTITION BY dept_id ORDER BY salary DESC)
                          FROM emp ORDER BY dept_id, 3"""):
    print(row)
print(cur.execute("SELECT name FROM emp WHERE salary > :s ORDER BY name", {"s": 90}).fetchall())
try:
    cur.execute("INSERT INTO dept(name) VALUES ('eng')")
except sqlite3.IntegrityError as e:
    print("IntegrityError:", e)
print(cur.execute("SELECT typeof(1), typeof(1.0), typeof('x'), typeof(NULL), 7 / 2, 7 / 2.0").fetchone())
con.close()
'''),
    Program("sqlite3_file_db", r'''import sqlite3

con = sqlite3.connect("shop.db")
con.execute("CREATE TABLE IF NOT EXISTS products(sku TEXT PRIMARY KEY, name TEXT, price INTEGER, qty INTEGER)")
with con:
    con.executemany("INSERT INTO products VALUES (?, ?, ?, ?)",
                    [("A1", "widget", 250, 10), ("B2", "gadget", 1299, 0), ("C3", "doohickey", 75, 42)])
try:
    with con:
        con.execute("UPDATE products SET qty = qty - 5 WHERE sku = 'A1'")
        raise RuntimeError("abort transaction")
except RuntimeError as e:
    print("rolled back:", e)
con.close()
con = sqlite3.connect("shop.db")
con.row_factory = sqlite3.Row
con.create_function("dollars", 1, lambda cents: f"${cents / 100:.2f}")
for row in con.execute("SELECT sku, name, dollars(price) AS price, qty FROM products ORDER BY price DESC"):
    print(dict(row))
print(con.execute("SELECT SUM(price * qty) FROM products").fetchone()[0])
print([r[1] for r in con.execute("PRAGMA table_info(products)")])
con.close()
'''),
    # ------------------------------------------------------------------ xml / html / urls
    Program("xml_etree_parse", r'''import xml.etree.ElementTree as ET

doc = """<catalog>
  <cd genre="rock"><title>Empire</title><artist>Bob</artist><price>10.90</price><year>1985</year></cd>
  <cd genre="pop"><title>Hide</title><artist>Bonnie</artist><price>9.90</price><year>1988</year></cd>
  <cd genre="rock"><title>Grey</title><artist>Dolly</artist><price>7.90</price><year>1982</year></cd>
</catalog>"""
root = ET.fromstring(doc)
print(root.tag, len(root), [cd.get("genre") for cd in root])
for cd in root.findall("cd[@genre='rock']"):
    print(cd.findtext("title"), float(cd.find("price").text))
print(sum(float(p.text) for p in root.iter("price")))
for cd in root.findall("cd"):
    if int(cd.findtext("year")) < 1986:
        cd.set("classic", "yes")
        root.remove(cd) if cd.findtext("title") == "Grey" else None
print(ET.tostring(root, encoding="unicode"))
try:
    ET.fromstring("<a><b></a>")
except ET.ParseError as e:
    print("ParseError:", e, e.position)
'''),
    Program("xml_etree_build_file", r'''import xml.etree.ElementTree as ET

root = ET.Element("feed", version="1.0")
for i, (title, score) in enumerate([("First", 3), ("Second & more", 5), ("<Third>", 1)], 1):
    e = ET.SubElement(root, "entry", id=str(i))
    ET.SubElement(e, "title").text = title
    ET.SubElement(e, "score").text = str(score)
ET.indent(root, space="  ")
tree = ET.ElementTree(root)
tree.write("feed.xml", encoding="utf-8", xml_declaration=True)
with open("feed.xml", encoding="utf-8") as f:
    print(f.read())
parsed = ET.parse("feed.xml").getroot()
best = max(parsed.iter("entry"), key=lambda e: int(e.findtext("score")))
print(best.get("id"), best.findtext("title"))
print([e.findtext("title") for e in parsed.iterfind(".//entry[score='1']")])
'''),
    Program("html_parser_escape", r'''import html
from html.parser import HTMLParser

class Outline(HTMLParser):
    def __init__(self):
        super().__init__()
        self.depth = 0
        self.links = []
    def handle_starttag(self, tag, attrs):
        print("  " * self.depth + f"<{tag}> {sorted(attrs)}" if attrs else "  " * self.depth + f"<{tag}>")
        if tag == "a":
            self.links.append(dict(attrs).get("href"))
        if tag not in ("br", "img"):
            self.depth += 1
    def handle_endtag(self, tag):
        self.depth -= 1
    def handle_data(self, data):
        if data.strip():
            print("  " * self.depth + repr(data.strip()))

p = Outline()
p.feed('<div id="x"><p>Tom &amp; Jerry&#39;s <a href="/t?a=1&amp;b=2">show</a><br></p><img src="i.png" alt="pic"></div>')
p.close()
print(p.links)
print(html.escape('<a href="x">Tom & "Jerry"</a>'), html.escape("it's", quote=False))
print(html.unescape("&lt;p&gt; &copy; 2024 &eacute;t&eacute; &#x1F600; &amp;amp;"))
'''),
    Program("urllib_parse_urls", r'''from urllib.parse import parse_qs, parse_qsl, quote, quote_plus, unquote, urlencode, urljoin, urlparse, urlsplit, urlunparse

u = urlparse("https://user@www.example.com:8080/path/to/page;params?q=python+url&lang=en&lang=fr#section-2")
print(u)
print(u.hostname, u.port, u.username, parse_qs(u.query), parse_qsl(u.query))
print(urlunparse(u._replace(query=urlencode({"q": "new value", "n": 1}), fragment="")))
print(urlencode([("a", "x y"), ("b", "&=?"), ("c", "é")]), urlencode({"k": [1, 2]}, doseq=True))
print(quote("/a b/ü?x=1"), quote_plus("a b&c"), quote("/a b", safe=""), unquote("%E2%82%AC%20sign"))
base = "http://example.com/dir/sub/page.html"
for rel in ["other.html", "../up.html", "/root.html", "//cdn.example.org/x.js", "?q=1", "#top"]:
    print(rel, "->", urljoin(base, rel))
print(urlsplit("mailto:someone@example.com"), urlparse("example.com/path").netloc == "")
'''),
    # ------------------------------------------------------------------ argparse
    Program("argparse_cli", r'''import argparse
import os

os.environ["COLUMNS"] = "80"
parser = argparse.ArgumentParser(prog="tool", description="A small demo CLI.")
parser.add_argument("-v", "--verbose", action="count", default=0, help="more output")
parser.add_argument("--name", default="world")
sub = parser.add_subparsers(dest="cmd", required=True)
add = sub.add_parser("add", help="add numbers")
add.add_argument("nums", nargs="+", type=int)
add.add_argument("--scale", type=float, default=1.0)
greet = sub.add_parser("greet", help="say hello")
greet.add_argument("--times", type=int, choices=range(1, 4), default=1)
greet.add_argument("--shout", action="store_true")

for argv in [["add", "1", "2", "3"], ["-vv", "add", "--scale", "0.5", "10", "20"],
             ["--name", "Ana", "greet", "--times", "2", "--shout"]]:
    args = parser.parse_args(argv)
    print(vars(args))
    if args.cmd == "add":
        print(" total:", sum(args.nums) * args.scale)
    else:
        msg = f"hello {args.name}"
        print(" ", (msg.upper() if args.shout else msg) * args.times)
ns, rest = parser.parse_known_args(["greet", "--extra", "1"])
print(ns.cmd, rest)
print(parser.format_help())
'''),
    Program("argparse_error_exit", r'''import argparse
import os

os.environ["COLUMNS"] = "80"
parser = argparse.ArgumentParser(prog="convert")
parser.add_argument("src")
parser.add_argument("--count", type=int, required=True)
print(parser.parse_args(["in.txt", "--count", "3"]))
print("now a bad invocation:")
parser.parse_args(["in.txt", "--count", "three"])
print("unreachable")
'''),
    # ------------------------------------------------------------------ logging / warnings
    Program("logging_stderr", r'''import logging
import sys

logging.basicConfig(stream=sys.stderr, level=logging.DEBUG, format="%(levelname)-8s %(name)s: %(message)s")
log = logging.getLogger("app")
db = logging.getLogger("app.db")
db.setLevel(logging.WARNING)
log.debug("starting with %d workers", 4)
log.info("config loaded: %s", {"mode": "test"})
db.info("this is filtered out")
db.warning("slow query: %.1f ms", 153.25)
try:
    {}["missing"]
except KeyError:
    log.exception("lookup failed")
print("stdout still works")
handler = logging.StreamHandler(sys.stdout)
handler.setFormatter(logging.Formatter("[%(levelname)s|%(funcName)s] %(message)s"))
audit = logging.getLogger("audit")
audit.addHandler(handler)
audit.propagate = False
def transfer(amount):
    audit.error("transfer of %s refused", amount)
transfer(100)
logging.getLogger().critical("shutting down")
'''),
    Program("logging_custom_handler", r'''import logging

class ListHandler(logging.Handler):
    def __init__(self):
        super().__init__()
        self.records = []
    def emit(self, record):
        self.records.append(self.format(record))

class OnlyOdd(logging.Filter):
    def filter(self, record):
        return record.args[0] % 2 == 1 if record.args else True

logger = logging.getLogger("worker")
logger.setLevel(logging.INFO)
h = ListHandler()
h.setFormatter(logging.Formatter("%(name)s|%(levelno)s|%(message)s"))
h.addFilter(OnlyOdd())
logger.addHandler(h)
for i in range(6):
    logger.info("job %d done", i)
logger.warning("no args warning")
adapter = logging.LoggerAdapter(logger, {"user": "ana"})
adapter.info("as user %d", 7)
print("\n".join(h.records))
print(logging.getLevelName(logging.WARNING), logging.getLevelName(25), logger.getEffectiveLevel())
'''),
    Program("warnings_stderr", r'''import warnings

def old_api(x):
    warnings.warn("old_api is deprecated; use new_api", DeprecationWarning, stacklevel=2)
    return x * 2

def risky():
    warnings.warn("value may overflow", RuntimeWarning)

print(old_api(21))
risky()
warnings.warn("plain user warning")
for _ in range(3):
    warnings.warn("repeated once only")
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    old_api(1)
    warnings.warn("captured", UserWarning)
print([(w.category.__name__, str(w.message)) for w in caught])
warnings.filterwarnings("error", category=RuntimeWarning)
try:
    risky()
except RuntimeWarning as e:
    print("raised:", e)
print("done")
'''),
    # ------------------------------------------------------------------ pickle / copy / pprint
    Program("pickle_roundtrip", r'''import copyreg
import io
import pickle

class Account:
    def __init__(self, owner, balance):
        self.owner = owner
        self.balance = balance
        self.history = []
    def __repr__(self):
        return f"Account({self.owner!r}, {self.balance})"
    def __getstate__(self):
        state = self.__dict__.copy()
        state["history"] = len(self.history)
        return state
    def __setstate__(self, state):
        n = state.pop("history")
        self.__dict__.update(state)
        self.history = ["restored"] * n

acc = Account("ana", 100)
acc.history += ["deposit", "withdraw"]
data = {"accounts": [acc], "nums": (1, 2.5, 3 + 4j), "nested": {"a": [None, True, b"x"]}}
for proto in (0, 2, pickle.HIGHEST_PROTOCOL):
    blob = pickle.dumps(data, protocol=proto)
    back = pickle.loads(blob)
    print(proto, len(blob), back["accounts"][0], back["accounts"][0].history, back["nums"], back["nested"])
shared = [1, 2]
pair = pickle.loads(pickle.dumps([shared, shared]))
print(pair[0] is pair[1])
with open("state.pkl", "wb") as f:
    pickle.dump(data["nums"], f)
with open("state.pkl", "rb") as f:
    print(pickle.load(f))
try:
    pickle.dumps(lambda x: x)
except (pickle.PicklingError, AttributeError) as e:
    print(type(e).__name__)
try:
    pickle.loads(b"garbage")
except pickle.UnpicklingError as e:
    print("UnpicklingError:", e)
'''),
    Program("copy_deep_shallow", r'''import copy

class Node:
    def __init__(self, val, children=None):
        self.val = val
        self.children = children or []
    def __repr__(self):
        return f"Node({self.val}, {self.children})" if self.children else f"Node({self.val})"
    def __copy__(self):
        return Node(self.val, self.children)

orig = {"list": [1, [2, 3]], "tuple": (4, [5])}
shallow = copy.copy(orig)
deep = copy.deepcopy(orig)
orig["list"][1].append(99)
orig["tuple"][1].append(6)
print(shallow)
print(deep)
tree = Node(1, [Node(2), Node(3, [Node(4)])])
c1, c2 = copy.copy(tree), copy.deepcopy(tree)
tree.children[1].children.append(Node(5))
print(c1)
print(c2)
cyc = [1]
cyc.append(cyc)
d = copy.deepcopy(cyc)
print(d[1] is d, d is not cyc, d)
'''),
    Program("pprint_nested", r'''from pprint import pformat, pprint, PrettyPrinter

data = {
    "users": [{"name": f"user{i}", "roles": ["admin", "dev"][: i % 3], "id": i, "meta": {"active": i % 2 == 0}}
              for i in range(4)],
    "settings": {"theme": "dark", "langs": ["en", "pt", "fr", "de", "es", "it"], "limits": (10, 20, 30)},
    "zeta": None, "alpha": 1.5,
}
pprint(data, width=60)
pprint(data, depth=2, compact=True)
print(pformat(list(range(40)), width=50, compact=True))
PrettyPrinter(indent=4, width=40, sort_dicts=False).pprint({"b": 1, "a": [1, 2, {"c": "long string " * 3}]})
pprint("a very long string that should be split by the pretty printer across lines " * 2, width=40)
'''),
    # ------------------------------------------------------------------ datetime / calendar
    Program("datetime_fixed_dates", r'''from datetime import date, datetime, time, timedelta, timezone

d = date(2024, 2, 28)
print(d + timedelta(days=1), d + timedelta(days=2), d.weekday(), d.isoweekday(), d.isocalendar())
print(date(2024, 12, 25) - date(2024, 3, 5), (date(2025, 1, 1) - date(2024, 1, 1)).days)
dt = datetime(2024, 7, 14, 18, 30, 5, 123456)
print(dt.isoformat(), dt.strftime("%A %d %B %Y %I:%M %p %j"), dt.timestamp() if dt.tzinfo else "naive")
utc = dt.replace(tzinfo=timezone.utc)
print(utc.timestamp(), utc.astimezone(timezone(timedelta(hours=-3, minutes=-30), "NST")))
print(datetime.strptime("03/05/24 14:07", "%m/%d/%y %H:%M"), datetime.fromisoformat("2024-03-05T10:20:30+01:00"))
print(datetime.fromtimestamp(0, tz=timezone.utc), datetime(2024, 1, 1) + timedelta(weeks=3, hours=-1))
td = timedelta(days=3, hours=25, minutes=61, seconds=-1)
print(td, td.total_seconds(), td // timedelta(hours=1), -td, abs(-td))
print(time(23, 59, 59).replace(microsecond=5), date.fromordinal(738000), date(2024, 3, 5).toordinal())
print(sorted([date(2024, 5, 1), date(2023, 12, 31), date(2024, 1, 15)]), max(dt.time(), time(12)))
'''),
    Program("calendar_month", r'''import calendar

print(calendar.month(2024, 2))
c = calendar.TextCalendar(calendar.SUNDAY)
print(c.formatmonth(2023, 12, w=3))
print(calendar.isleap(2024), calendar.isleap(1900), calendar.leapdays(1900, 2025))
print(calendar.monthrange(2024, 2), calendar.weekday(2024, 3, 5), calendar.day_name[calendar.weekday(2024, 3, 5)])
print([calendar.month_abbr[m] for m in range(1, 13)])
print(calendar.monthcalendar(2024, 9)[0], calendar.timegm((2024, 1, 1, 0, 0, 0)))
fridays13 = [(y, m) for y in range(2024, 2027) for m in range(1, 13) if calendar.weekday(y, m, 13) == calendar.FRIDAY]
print(fridays13)
'''),
    # ------------------------------------------------------------------ graphlib / array
    Program("graphlib_toposort", r'''from graphlib import CycleError, TopologicalSorter

deps = {"app": {"lib", "utils"}, "lib": {"core"}, "utils": {"core"}, "tests": {"app"}, "core": set()}
ts = TopologicalSorter(deps)
ts.prepare()
stage = 0
while ts.is_active():
    ready = sorted(ts.get_ready())
    print(f"stage {stage}: {ready}")
    ts.done(*ready)
    stage += 1
order = list(TopologicalSorter({"b": ["a"], "c": ["b"], "d": ["a"]}).static_order())
print(order, order.index("a") < order.index("b") < order.index("c"))
try:
    list(TopologicalSorter({"x": {"y"}, "y": {"z"}, "z": {"x"}}).static_order())
except CycleError as e:
    cyc = e.args[1]
    print("CycleError", len(cyc), cyc[0] == cyc[-1], sorted(set(cyc)))
'''),
    Program("array_typed", r'''import sys
from array import array

a = array("i", [5, -3, 12, 7])
a.append(100)
a.extend([1, 2])
print(a, a.itemsize, a.typecode, len(a), a.tolist()[::2])
b = array("d", (x / 4 for x in range(5)))
print(b, sum(b), b.index(0.5))
raw = array("H", [1, 256, 65535]).tobytes()
print(raw.hex() if sys.byteorder == "little" else raw[::-1].hex())
c = array("H")
c.frombytes(raw)
c.byteswap()
print(c)
u = array("u", "héllo")
print(u.tounicode(), array("b", b"\x01\xff"))
try:
    array("B", [256])
except OverflowError as e:
    print("OverflowError:", e)
'''),
]

PROGRAMS += [
    # ------------------------------------------------------------------ asyncio / threads
    Program("asyncio_gather_queue", r'''import asyncio

async def fetch(name, delay_steps):
    for _ in range(delay_steps):
        await asyncio.sleep(0)
    return f"{name}:{delay_steps}"

async def producer(q, n):
    for i in range(n):
        await q.put(i)
    for _ in range(2):
        await q.put(None)

async def consumer(q, results, wid):
    while (item := await q.get()) is not None:
        results.append((item, item * item, wid))
        await asyncio.sleep(0)

async def main():
    print(await asyncio.gather(fetch("a", 3), fetch("b", 1), fetch("c", 2)))
    q = asyncio.Queue(maxsize=3)
    results = []
    await asyncio.gather(producer(q, 8), consumer(q, results, 1), consumer(q, results, 2))
    print(sorted((i, sq) for i, sq, _ in results))
    task = asyncio.create_task(fetch("bg", 5))
    done, pending = await asyncio.wait({task})
    print(task.result(), len(done), len(pending))

asyncio.run(main())
'''),
    Program("asyncio_timeouts_errors", r'''import asyncio

async def slow():
    await asyncio.sleep(10)
    return "never"

async def failing(n):
    await asyncio.sleep(0)
    raise ValueError(f"bad {n}")

async def limited(sem, i, log):
    async with sem:
        log.append(("in", i))
        await asyncio.sleep(0)
        log.append(("out", i))
    return i * 10

async def main():
    try:
        await asyncio.wait_for(slow(), timeout=0.05)
    except asyncio.TimeoutError:
        print("timed out")
    res = await asyncio.gather(failing(1), asyncio.sleep(0, result="ok"), failing(2), return_exceptions=True)
    print([repr(r) for r in res])
    sem = asyncio.Semaphore(2)
    log = []
    print(await asyncio.gather(*(limited(sem, i, log) for i in range(5))))
    active = peak = 0
    for kind, _ in log:
        active += 1 if kind == "in" else -1
        peak = max(peak, active)
    print("peak concurrency", peak)
    t = asyncio.create_task(slow())
    await asyncio.sleep(0)
    t.cancel()
    try:
        await t
    except asyncio.CancelledError:
        print("cancelled", t.cancelled())

asyncio.run(main())
'''),
    Program("threading_counter_lock", r'''import threading

counter = 0
lock = threading.Lock()
per_thread = [0] * 8

def work(idx, n):
    global counter
    for _ in range(n):
        with lock:
            counter += 1
        per_thread[idx] += 1

threads = [threading.Thread(target=work, args=(i, 5000), name=f"w{i}") for i in range(8)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print(counter, per_thread, all(not t.is_alive() for t in threads))
barrier = threading.Barrier(3)
order = []
olock = threading.Lock()
def phase(i):
    with olock:
        order.append(("a", i))
    barrier.wait()
    with olock:
        order.append(("b", i))
ts = [threading.Thread(target=phase, args=(i,)) for i in range(3)]
for t in ts:
    t.start()
for t in ts:
    t.join()
print(sorted(order[:3]), sorted(order[3:]), [k for k, _ in order])
local = threading.local()
out = {}
def use_local(i):
    local.value = i * 11
    out[i] = local.value
ts = [threading.Thread(target=use_local, args=(i,)) for i in range(4)]
[t.start() for t in ts]
[t.join() for t in ts]
print(sorted(out.items()), hasattr(local, "value"))
'''),
    Program("threading_queue_workers", r'''import queue
import threading

tasks = queue.Queue()
results = queue.Queue()

def worker():
    while True:
        item = tasks.get()
        if item is None:
            tasks.task_done()
            break
        results.put((item, sum(i * i for i in range(item))))
        tasks.task_done()

workers = [threading.Thread(target=worker, daemon=True) for _ in range(4)]
for w in workers:
    w.start()
for n in range(1, 21):
    tasks.put(n)
for _ in workers:
    tasks.put(None)
tasks.join()
for w in workers:
    w.join()
out = sorted(results.get() for _ in range(results.qsize()))
print(len(out), out[:5], out[-1])
cond = threading.Condition()
ready = []
def waiter():
    with cond:
        cond.wait_for(lambda: ready)
        ready.append("waiter saw " + ready[0])
t = threading.Thread(target=waiter)
t.start()
with cond:
    ready.append("signal")
    cond.notify_all()
t.join()
print(ready)
ev = threading.Event()
timer = threading.Timer(0.01, ev.set)
timer.start()
print(ev.wait(5), threading.active_count() >= 1)
timer.join()
'''),
    Program("concurrent_threadpool_map", r'''from concurrent.futures import ThreadPoolExecutor, as_completed, wait, FIRST_EXCEPTION

def collatz_len(n):
    steps = 0
    while n != 1:
        n = n // 2 if n % 2 == 0 else 3 * n + 1
        steps += 1
    return steps

with ThreadPoolExecutor(max_workers=4) as ex:
    nums = list(range(1, 31))
    lengths = list(ex.map(collatz_len, nums))
    print(lengths)
    best = max(zip(lengths, nums))
    print("longest:", best)
    futs = {ex.submit(collatz_len, n): n for n in [27, 97, 871, 6171]}
    done = {futs[f]: f.result() for f in as_completed(futs)}
    print(sorted(done.items()))

def maybe_fail(x):
    if x == 3:
        raise ZeroDivisionError(f"cannot handle {x}")
    return x * 2

with ThreadPoolExecutor(2) as ex:
    fs = [ex.submit(maybe_fail, i) for i in range(5)]
    wait(fs)
    for i, f in enumerate(fs):
        e = f.exception()
        print(i, f"error {type(e).__name__}: {e}" if e else f.result())
    try:
        list(ex.map(maybe_fail, range(5)))
    except ZeroDivisionError as e:
        print("map raised", e)
'''),
    # ------------------------------------------------------------------ language features
    Program("generators_pipeline", r'''import itertools

def read_records(lines):
    for line in lines:
        line = line.strip()
        if line and not line.startswith("#"):
            yield line.split(",")

def parse(records):
    for name, qty, price in records:
        yield name, int(qty), float(price)

def totals(items):
    for name, qty, price in items:
        yield name, round(qty * price, 2)

data = ["# header", "apple,3,0.5", "", "pear,2,1.25", "fig,10,0.3"]
print(list(totals(parse(read_records(data)))))

def primes():
    yield 2
    found = []
    for n in itertools.count(3, 2):
        if all(n % p for p in found if p * p <= n):
            found.append(n)
            yield n

print(list(itertools.islice(primes(), 15)))

def averager():
    total = count = 0
    avg = None
    while True:
        x = yield avg
        if x is None:
            return (count, avg)
        total += x
        count += 1
        avg = total / count

g = averager()
next(g)
print([g.send(x) for x in [10, 20, 60]])
try:
    g.send(None)
except StopIteration as e:
    print("returned", e.value)

def flatten(x):
    for item in x:
        if isinstance(item, list):
            yield from flatten(item)
        else:
            yield item

print(list(flatten([1, [2, [3, [4, [5]]]], 6])))
gen = (i * i for i in range(5))
print(sum(gen), sum(gen))
'''),
    Program("decorators_stack", r'''import functools

def count_calls(func):
    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        wrapper.calls += 1
        return func(*args, **kwargs)
    wrapper.calls = 0
    return wrapper

def retry(times, exceptions=(Exception,)):
    def deco(func):
        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            for attempt in range(1, times + 1):
                try:
                    return func(*args, **kwargs)
                except exceptions as e:
                    print(f"  attempt {attempt} failed: {e}")
            raise RuntimeError(f"{func.__name__} failed after {times} attempts")
        return wrapper
    return deco

def trace(func):
    @functools.wraps(func)
    def wrapper(*args):
        result = func(*args)
        print(f"{func.__name__}{args} = {result}")
        return result
    return wrapper

state = {"n": 0}

@retry(3, (ConnectionError,))
@count_calls
def flaky():
    state["n"] += 1
    if state["n"] < 3:
        raise ConnectionError(f"try {state['n']}")
    return "connected"

print(flaky(), flaky.__wrapped__.calls, flaky.__name__)

@trace
def gcd(a, b):
    return a if b == 0 else gcd(b, a % b)

gcd(48, 18)

def register(registry):
    def deco(cls):
        registry[cls.__name__.lower()] = cls
        return cls
    return deco

PLUGINS = {}

@register(PLUGINS)
class Csv: ...

@register(PLUGINS)
class Json: ...

print(sorted(PLUGINS))

@retry(2)
def always_bad():
    raise ValueError("nope")

try:
    always_bad()
except RuntimeError as e:
    print(e)
'''),
    Program("classes_repr_dunder", r'''from functools import total_ordering
import math

class Vector:
    __slots__ = ("x", "y")
    def __init__(self, x, y):
        self.x, self.y = x, y
    def __repr__(self):
        return f"Vector({self.x!r}, {self.y!r})"
    def __str__(self):
        return f"<{self.x}, {self.y}>"
    def __add__(self, o):
        return Vector(self.x + o.x, self.y + o.y)
    def __sub__(self, o):
        return Vector(self.x - o.x, self.y - o.y)
    def __mul__(self, k):
        return Vector(self.x * k, self.y * k)
    __rmul__ = __mul__
    def __abs__(self):
        return math.hypot(self.x, self.y)
    def __eq__(self, o):
        return isinstance(o, Vector) and (self.x, self.y) == (o.x, o.y)
    def __hash__(self):
        return hash((self.x, self.y))
    def __iter__(self):
        yield self.x
        yield self.y
    def __bool__(self):
        return bool(self.x or self.y)

@total_ordering
class Money:
    def __init__(self, cents, currency="USD"):
        self.cents, self.currency = cents, currency
    @classmethod
    def parse(cls, s):
        amount, cur = s.split()
        return cls(round(float(amount) * 100), cur)
    @property
    def dollars(self):
        return self.cents / 100
    def __repr__(self):
        return f"Money({self.cents}, {self.currency!r})"
    def __format__(self, spec):
        return f"{self.dollars:{spec or '.2f'}} {self.currency}"
    def __eq__(self, o):
        return (self.cents, self.currency) == (o.cents, o.currency)
    def __lt__(self, o):
        if self.currency != o.currency:
            return NotImplemented
        return self.cents < o.cents

class Matrix:
    def __init__(self, rows):
        self.rows = [list(r) for r in rows]
    def __matmul__(self, o):
        cols = list(zip(*o.rows))
        return Matrix([[sum(a * b for a, b in zip(r, c)) for c in cols] for r in self.rows])
    def __getitem__(self, ij):
        i, j = ij
        return self.rows[i][j]
    def __len__(self):
        return len(self.rows)
    def __repr__(self):
        return f"Matrix({self.rows})"

v = Vector(3, 4)
print(v, repr(v), abs(v), v + Vector(1, 1), 2 * v, v - v, bool(v - v), list(v), {v, Vector(3, 4)})
prices = [Money.parse("3.50 USD"), Money(199), Money.parse("0.99 USD")]
print(sorted(prices), max(prices), f"{prices[0]}", f"{prices[1]:.1f}", Money(1) <= Money(1))
try:
    Money(1, "EUR") < Money(2)
except TypeError as e:
    print("TypeError:", e)
m = Matrix([[1, 2], [3, 4]]) @ Matrix([[5, 6], [7, 8]])
print(m, m[1, 0], len(m))
try:
    v.z = 1
except AttributeError as e:
    print("AttributeError:", e)
'''),
    Program("match_statement", r'''from dataclasses import dataclass

@dataclass
class Point:
    x: int
    y: int

def describe(obj):
    match obj:
        case 0 | 0.0:
            return "zero"
        case int(n) if n < 0:
            return f"negative int {n}"
        case int() | float():
            return f"number {obj}"
        case str() as s if s.isdigit():
            return f"digit string {s}"
        case [x, y]:
            return f"pair {x},{y}"
        case [first, *rest]:
            return f"list starting {first} with {len(rest)} more"
        case {"type": "user", "name": str(name), **extra}:
            return f"user {name} extras={sorted(extra)}"
        case Point(x=0, y=0):
            return "origin"
        case Point(x=x, y=y) if x == y:
            return f"diagonal point {x}"
        case Point():
            return f"point {obj}"
        case _:
            return f"something else: {type(obj).__name__}"

for o in [0, -5, 3.5, "42", "abc", [1, 2], [1, 2, 3, 4], [], {"type": "user", "name": "ana", "age": 3, "x": 1},
          Point(0, 0), Point(2, 2), Point(1, 5), None]:
    print(repr(o), "->", describe(o))

def run(cmd):
    match cmd.split():
        case ["go", ("north" | "south" | "east" | "west") as d]:
            return f"going {d}"
        case ["take", *items] if items:
            return "taking " + " and ".join(items)
        case ["quit" | "exit"]:
            return "bye"
        case _:
            return f"unknown: {cmd!r}"

for c in ["go north", "go up", "take key lamp", "take", "exit"]:
    print(run(c))
'''),
    Program("recursion_deep_limit", r'''import sys

sys.setrecursionlimit(100000)

def depth(n):
    return 0 if n == 0 else 1 + depth(n - 1)

print(depth(20000))

def ackermann(m, n):
    if m == 0:
        return n + 1
    if n == 0:
        return ackermann(m - 1, 1)
    return ackermann(m - 1, ackermann(m, n - 1))

print(ackermann(2, 3), ackermann(3, 3))

def permutations(s):
    if len(s) <= 1:
        return [s]
    return [s[i] + p for i in range(len(s)) for p in permutations(s[:i] + s[i + 1:])]

print(permutations("abc"), len(permutations("abcdef")))

def hanoi(n, a, b, c, moves):
    if n:
        hanoi(n - 1, a, c, b, moves)
        moves.append((a, c))
        hanoi(n - 1, b, a, c, moves)
    return moves

print(len(hanoi(10, "A", "B", "C", [])), hanoi(2, "A", "B", "C", []))
sys.setrecursionlimit(200)

def runaway(n):
    return runaway(n + 1)

try:
    runaway(0)
except RecursionError as e:
    print("RecursionError:", e)
'''),
    Program("recursion_flood_fill", r'''import sys

sys.setrecursionlimit(1 << 16)
data = sys.stdin.read().split()
h, w = int(data[0]), int(data[1])
grid = [list(row) for row in data[2:2 + h]]
seen = [[False] * w for _ in range(h)]

def fill(r, c):
    if r < 0 or c < 0 or r >= h or c >= w or seen[r][c] or grid[r][c] != "#":
        return 0
    seen[r][c] = True
    return 1 + fill(r + 1, c) + fill(r - 1, c) + fill(r, c + 1) + fill(r, c - 1)

sizes = []
for r in range(h):
    for c in range(w):
        if grid[r][c] == "#" and not seen[r][c]:
            sizes.append(fill(r, c))
print(len(sizes))
print(*sorted(sizes, reverse=True))
''', stdin="6 10\n##..#....#\n#...##...#\n....#..###\n.##.......\n.##..####.\n......#..#\n"),
    Program("bigint_arithmetic", r'''import math
import sys

f1000 = math.factorial(1000)
print(len(str(f1000)), sum(map(int, str(f1000))), str(f1000)[:20], (len(str(f1000)) - len(str(f1000).rstrip("0"))))
print(pow(2, 10**18, 10**9 + 7), pow(3, -1, 11), pow(12345678901234567890, 3))
n = 2 ** 127 - 1
print(n, n.bit_length(), n.to_bytes(16, "big").hex(), int.from_bytes(b"\xff\x00", "little"))
a, b = 0, 1
for _ in range(500):
    a, b = b, a + b
print(a)
print(math.isqrt(10 ** 100), (10 ** 50 + 1) ** 2 - 10 ** 100)
big = 7 ** 6000
try:
    str(big)
except ValueError as e:
    print("ValueError:", e)
sys.set_int_max_str_digits(0)
s = str(big)
print(len(s), s[:10], s[-10:])
print(divmod(-10 ** 30, 7), (-10 ** 30) % 7, hex(2 ** 64)[:6], f"{2 ** 70:,}")
'''),
    Program("bigint_modular_math", r'''def extended_gcd(a, b):
    if b == 0:
        return a, 1, 0
    g, x, y = extended_gcd(b, a % b)
    return g, y, x - (a // b) * y

def crt(remainders, moduli):
    x, m = 0, 1
    for r, mod in zip(remainders, moduli):
        g, p, _ = extended_gcd(m, mod)
        assert (r - x) % g == 0
        x += m * ((r - x) // g * p % (mod // g))
        m = m * mod // g
        x %= m
    return x, m

def miller_rabin(n):
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for a in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = x * x % n
            if x == n - 1:
                break
        else:
            return False
    return True

print(extended_gcd(240, 46))
print(crt([2, 3, 2], [3, 5, 7]), crt([1, 2, 3, 4], [5, 7, 9, 11]))
print([p for p in range(10**12, 10**12 + 100) if miller_rabin(p)])
print(miller_rabin(2**61 - 1), miller_rabin(2**61 + 1), miller_rabin(561))
MOD = 998244353
fact = [1] * 1001
for i in range(1, 1001):
    fact[i] = fact[i - 1] * i % MOD
def nCr(n, r):
    return fact[n] * pow(fact[r], MOD - 2, MOD) * pow(fact[n - r], MOD - 2, MOD) % MOD
print(nCr(1000, 500), nCr(10, 3))
'''),
    # ------------------------------------------------------------------ intended failures
    Program("error_int_parse", r'''n = int(input())
total = 0
for _ in range(n):
    total += int(input())
    print("running total", total)
print("total", total)
''', stdin="3\n10\n20\nthirty\n"),
    Program("error_key_lookup", r'''inventory = {"apple": 3, "pear": 0, "kiwi": 12}
orders = [("apple", 2), ("kiwi", 5), ("mango", 1)]

def fulfil(item, qty):
    stock = inventory[item]
    if stock < qty:
        raise ValueError(f"not enough {item}")
    inventory[item] = stock - qty
    return inventory[item]

for item, qty in orders:
    print(item, "left:", fulfil(item, qty))
'''),
    Program("error_chained_custom", r'''class ConfigError(Exception):
    def __init__(self, key, reason):
        super().__init__(f"{key}: {reason}")
        self.key = key

def load(cfg, key):
    try:
        return int(cfg[key])
    except KeyError as e:
        raise ConfigError(key, "missing") from e
    except ValueError:
        raise ConfigError(key, "not an integer")

cfg = {"port": "8080", "workers": "four"}
print(load(cfg, "port"))
try:
    load(cfg, "workers")
except ConfigError as e:
    print("caught:", e, "| context:", type(e.__context__).__name__, "| cause:", e.__cause__)
print(load(cfg, "timeout"))
'''),
    Program("error_sys_exit_message", r'''import sys

def validate(values):
    bad = [v for v in values if v < 0]
    if bad:
        sys.exit(f"error: negative values {bad}")
    return sum(values)

nums = list(map(int, sys.stdin.read().split()))
print("read", len(nums), "numbers")
sys.stdout.flush()
print(validate(nums[:3]))
print(validate(nums))
''', stdin="1 2 3 -4 5 -6\n"),
    Program("error_assertion_exit_code", r'''import atexit
import sys

atexit.register(lambda: print("atexit handler ran"))

def check(xs):
    assert xs == sorted(xs), f"not sorted: {xs}"
    return True

print(check([1, 2, 3]))
try:
    check([3, 1])
except AssertionError as e:
    print("AssertionError:", e)
print("exiting with 3", file=sys.stderr)
sys.exit(3)
'''),
]

PROGRAMS += [
    # ------------------------------------------------------------------ competitive programming
    Program("cp_union_find", r'''import sys

def main():
    data = sys.stdin.buffer.read().split()
    n, q = int(data[0]), int(data[1])
    parent = list(range(n))
    size = [1] * n

    def find(x):
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    out = []
    pos = 2
    for _ in range(q):
        op, a, b = data[pos].decode(), int(data[pos + 1]), int(data[pos + 2])
        pos += 3
        ra, rb = find(a), find(b)
        if op == "union":
            if ra != rb:
                if size[ra] < size[rb]:
                    ra, rb = rb, ra
                parent[rb] = ra
                size[ra] += size[rb]
        else:
            out.append("YES" if ra == rb else "NO")
    comps = sorted((size[r] for r in range(n) if find(r) == r), reverse=True)
    out.append(" ".join(map(str, comps)))
    sys.stdout.write("\n".join(out) + "\n")

main()
''', stdin="8 9\nunion 0 1\nunion 2 3\nsame 0 3\nunion 1 3\nsame 0 2\nunion 5 6\nsame 4 5\nunion 6 7\nsame 5 7\n"),
    Program("cp_fenwick_queries", r'''import sys

class Fenwick:
    def __init__(self, n):
        self.n = n
        self.t = [0] * (n + 1)
    def add(self, i, v):
        while i <= self.n:
            self.t[i] += v
            i += i & -i
    def prefix(self, i):
        s = 0
        while i > 0:
            s += self.t[i]
            i -= i & -i
        return s

input = sys.stdin.readline
n, q = map(int, input().split())
arr = list(map(int, input().split()))
fw = Fenwick(n)
for i, v in enumerate(arr, 1):
    fw.add(i, v)
for _ in range(q):
    kind, x, y = input().split()
    x, y = int(x), int(y)
    if kind == "S":
        print(fw.prefix(y) - fw.prefix(x - 1))
    else:
        fw.add(x, y - arr[x - 1])
        arr[x - 1] = y
''', stdin="8 6\n5 2 9 -3 5 20 10 -7\nS 1 8\nS 3 5\nU 4 10\nS 3 5\nU 8 0\nS 6 8\n"),
    Program("cp_knapsack_dp", r'''import sys

def main():
    it = iter(sys.stdin.read().split())
    n, cap = int(next(it)), int(next(it))
    items = [(int(next(it)), int(next(it))) for _ in range(n)]
    dp = [[0] * (cap + 1) for _ in range(n + 1)]
    for i, (w, v) in enumerate(items, 1):
        for c in range(cap + 1):
            dp[i][c] = dp[i - 1][c]
            if w <= c and dp[i - 1][c - w] + v > dp[i][c]:
                dp[i][c] = dp[i - 1][c - w] + v
    chosen, c = [], cap
    for i in range(n, 0, -1):
        if dp[i][c] != dp[i - 1][c]:
            chosen.append(i)
            c -= items[i - 1][0]
    print(dp[n][cap])
    print(*sorted(chosen))
    s = "AGGTABQZ"
    t = "GXTXAYBZ"
    L = [[0] * (len(t) + 1) for _ in range(len(s) + 1)]
    for i in range(len(s)):
        for j in range(len(t)):
            L[i + 1][j + 1] = L[i][j] + 1 if s[i] == t[j] else max(L[i][j + 1], L[i + 1][j])
    print("LCS", L[-1][-1])

main()
''', stdin="5 10\n5 10\n4 40\n6 30\n3 50\n2 15\n"),
    Program("cp_kmp_strings", r'''def prefix_function(s):
    pi = [0] * len(s)
    for i in range(1, len(s)):
        k = pi[i - 1]
        while k and s[i] != s[k]:
            k = pi[k - 1]
        if s[i] == s[k]:
            k += 1
        pi[i] = k
    return pi

def find_all(text, pat):
    pi = prefix_function(pat + "\0" + text)
    m = len(pat)
    return [i - 2 * m for i in range(len(pi)) if pi[i] == m]

def longest_palindrome(s):
    best = ""
    for center in range(2 * len(s) - 1):
        l, r = center // 2, (center + 1) // 2
        while l >= 0 and r < len(s) and s[l] == s[r]:
            l, r = l - 1, r + 1
        if r - l - 1 > len(best):
            best = s[l + 1:r]
    return best

def z_function(s):
    z = [0] * len(s)
    l = r = 0
    for i in range(1, len(s)):
        if i < r:
            z[i] = min(r - i, z[i - l])
        while i + z[i] < len(s) and s[z[i]] == s[i + z[i]]:
            z[i] += 1
        if i + z[i] > r:
            l, r = i, i + z[i]
    return z

T = int(input())
for _ in range(T):
    text, pat = input().split()
    print(find_all(text, pat), prefix_function(pat), longest_palindrome(text))
print(z_function("aabxaabxcaabxaabxay"))
''', stdin="3\nabababcabab abab\nforgeeksskeegfor ee\nmississippi issi\n"),
    Program("cp_matrix_power", r'''MOD = 10**9 + 7

def mat_mul(A, B):
    return [[sum(A[i][k] * B[k][j] for k in range(len(B))) % MOD for j in range(len(B[0]))] for i in range(len(A))]

def mat_pow(M, p):
    R = [[int(i == j) for j in range(len(M))] for i in range(len(M))]
    while p:
        if p & 1:
            R = mat_mul(R, M)
        M = mat_mul(M, M)
        p >>= 1
    return R

def fib(n):
    return mat_pow([[1, 1], [1, 0]], n)[0][1]

def tribonacci(n):
    if n < 3:
        return [0, 0, 1][n]
    return mat_pow([[1, 1, 1], [1, 0, 0], [0, 1, 0]], n - 2)[0][0]

for n in [10, 100, 10**18]:
    print(n, fib(n), tribonacci(n))
'''),
    Program("cp_binary_search_answer", r'''import sys

def can_ship(weights, days, cap):
    need, cur = 1, 0
    for w in weights:
        if cur + w > cap:
            need += 1
            cur = 0
        cur += w
    return need <= days

def min_capacity(weights, days):
    lo, hi = max(weights), sum(weights)
    while lo < hi:
        mid = (lo + hi) // 2
        if can_ship(weights, days, mid):
            hi = mid
        else:
            lo = mid + 1
    return lo

def isqrt_bs(n):
    lo, hi = 0, n
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if mid * mid <= n:
            lo = mid
        else:
            hi = mid - 1
    return lo

lines = sys.stdin.read().strip().split("\n")
t = int(lines[0])
for i in range(1, 2 * t, 2):
    days = int(lines[i])
    weights = list(map(int, lines[i + 1].split()))
    print(min_capacity(weights, days))
print(isqrt_bs(10**30 + 5), isqrt_bs(99))
''', stdin="3\n5\n1 2 3 4 5 6 7 8 9 10\n3\n3 2 2 4 1 4\n4\n1 2 3 1 1\n"),
    Program("cp_sliding_window", r'''import sys
from collections import deque

def max_sliding(nums, k):
    dq, out = deque(), []
    for i, x in enumerate(nums):
        while dq and nums[dq[-1]] <= x:
            dq.pop()
        dq.append(i)
        if dq[0] <= i - k:
            dq.popleft()
        if i >= k - 1:
            out.append(nums[dq[0]])
    return out

def longest_unique(s):
    last, start, best = {}, 0, (0, 0)
    for i, ch in enumerate(s):
        if last.get(ch, -1) >= start:
            start = last[ch] + 1
        last[ch] = i
        if i - start + 1 > best[1] - best[0]:
            best = (start, i + 1)
    return s[best[0]:best[1]]

def two_sum_sorted(nums, target):
    i, j = 0, len(nums) - 1
    while i < j:
        s = nums[i] + nums[j]
        if s == target:
            return i, j
        i, j = (i + 1, j) if s < target else (i, j - 1)
    return None

for line in sys.stdin:
    parts = line.split()
    if not parts:
        continue
    if parts[0] == "max":
        k = int(parts[1])
        print(max_sliding(list(map(int, parts[2:])), k))
    elif parts[0] == "uniq":
        print(longest_unique(parts[1]))
    elif parts[0] == "twosum":
        print(two_sum_sorted(sorted(map(int, parts[2:])), int(parts[1])))
''', stdin="max 3 1 3 -1 -3 5 3 6 7\nuniq abcabcbb\nuniq pwwkew\n\ntwosum 9 2 7 11 15\ntwosum 100 1 2 3\n"),
    Program("cp_intervals_sort", r'''from functools import cmp_to_key

def merge(intervals):
    out = []
    for s, e in sorted(intervals):
        if out and s <= out[-1][1]:
            out[-1][1] = max(out[-1][1], e)
        else:
            out.append([s, e])
    return out

def largest_number(nums):
    strs = sorted(map(str, nums), key=cmp_to_key(lambda a, b: (b + a > a + b) - (b + a < a + b)))
    return "".join(strs).lstrip("0") or "0"

def meeting_rooms(meetings):
    events = sorted([(s, 1) for s, _ in meetings] + [(e, -1) for _, e in meetings])
    cur = best = 0
    for _, d in events:
        cur += d
        best = max(best, cur)
    return best

print(merge([[1, 3], [2, 6], [8, 10], [15, 18], [17, 20], [0, 0]]))
print(largest_number([3, 30, 34, 5, 9]), largest_number([0, 0]), largest_number([10, 2]))
print(meeting_rooms([(0, 30), (5, 10), (15, 20), (10, 15), (25, 35)]))
people = [("ana", 31, 5.5), ("bo", 25, 6.1), ("cy", 31, 5.9), ("di", 25, 5.4)]
print(sorted(people, key=lambda p: (-p[1], p[2])))
print(sorted("Banana apple Cherry apple".split(), key=str.lower), sorted([3, -1, -4, 2], key=abs))
'''),
    Program("humaneval_style_funcs", r'''from typing import List

def has_close_elements(numbers: List[float], threshold: float) -> bool:
    s = sorted(numbers)
    return any(b - a < threshold for a, b in zip(s, s[1:]))

def separate_paren_groups(paren_string: str) -> List[str]:
    groups, cur, depth = [], [], 0
    for ch in paren_string.replace(" ", ""):
        cur.append(ch)
        depth += 1 if ch == "(" else -1
        if depth == 0:
            groups.append("".join(cur))
            cur = []
    return groups

def below_zero(operations: List[int]) -> bool:
    bal = 0
    for op in operations:
        bal += op
        if bal < 0:
            return True
    return False

def is_palindrome(text: str) -> bool:
    t = [c.lower() for c in text if c.isalnum()]
    return t == t[::-1]

def roman(n: int) -> str:
    table = [(1000, "M"), (900, "CM"), (500, "D"), (400, "CD"), (100, "C"), (90, "XC"),
             (50, "L"), (40, "XL"), (10, "X"), (9, "IX"), (5, "V"), (4, "IV"), (1, "I")]
    out = []
    for v, s in table:
        q, n = divmod(n, v)
        out.append(s * q)
    return "".join(out)

def check():
    assert has_close_elements([1.0, 2.8, 3.0, 4.0], 0.3)
    assert not has_close_elements([1.0, 2.0, 3.0], 0.5)
    assert separate_paren_groups("( ) (( )) (( )( ))") == ["()", "(())", "(()())"]
    assert below_zero([1, 2, -4, 5]) and not below_zero([1, 2, 3])
    assert is_palindrome("A man, a plan, a canal: Panama")
    return "all tests passed"

print(check())
print(separate_paren_groups("(()()) ((())) () ((())()())"))
print([roman(n) for n in [1, 4, 9, 14, 40, 90, 400, 1994, 2024, 3999]])
'''),
    # ------------------------------------------------------------------ misc stdlib
    Program("uuid_ipaddress", r'''import ipaddress
import uuid

print(uuid.uuid5(uuid.NAMESPACE_DNS, "python.org"), uuid.uuid3(uuid.NAMESPACE_URL, "https://example.com"))
u = uuid.UUID("12345678-1234-5678-1234-567812345678")
print(u.hex, u.version, u.int % 1000, uuid.UUID(bytes=u.bytes) == u, str(uuid.UUID(int=0)))
net = ipaddress.ip_network("192.168.10.0/26")
print(net.num_addresses, net.netmask, net.broadcast_address, list(net.subnets(new_prefix=28)))
ip = ipaddress.ip_address("192.168.10.77")
print(ip in net, ip.is_private, ipaddress.ip_address("8.8.8.8").is_global, int(ip), ip + 5)
v6 = ipaddress.ip_address("2001:db8::1")
print(v6.exploded, v6.compressed, v6.version, ipaddress.ip_interface("10.1.2.3/255.255.0.0").network)
print(list(ipaddress.collapse_addresses([ipaddress.ip_network("10.0.0.0/25"), ipaddress.ip_network("10.0.0.128/25")])))
try:
    ipaddress.ip_address("300.1.1.1")
except ValueError as e:
    print("ValueError:", e)
'''),
    Program("pathlib_shutil_cwd", r'''import fnmatch
import glob
import os
import shutil
from pathlib import Path

root = Path("workspace")
(root / "src" / "pkg").mkdir(parents=True, exist_ok=True)
(root / "docs").mkdir(exist_ok=True)
files = {"src/pkg/__init__.py": "", "src/pkg/core.py": "def f():\n    return 1\n", "src/main.py": "import pkg\n",
         "docs/index.md": "# Title\n", "docs/notes.txt": "ünïcode notes\n"}
for rel, text in files.items():
    (root / rel).write_text(text, encoding="utf-8")
print(sorted(p.relative_to(root).as_posix() for p in root.rglob("*.py")))
print(sorted(glob.glob("workspace/**/*.md", recursive=True)))
print(sorted(fnmatch.filter(os.listdir(root / "docs"), "*.t?t")))
p = root / "src" / "pkg" / "core.py"
print(p.name, p.stem, p.suffix, p.parent.name, p.with_suffix(".pyc").name, p.stat().st_size, p.exists())
print(Path("a/b/../c.tar.gz").suffixes, Path("/x/y").is_absolute(), Path("a", "b", "c").as_posix())
shutil.copytree(root / "src", root / "backup")
shutil.move(str(root / "docs" / "notes.txt"), str(root / "notes.txt"))
print(sorted(os.listdir(root)), sorted(os.listdir(root / "backup" / "pkg")))
print((root / "notes.txt").read_bytes())
shutil.rmtree(root / "backup")
total = sum(f.stat().st_size for f in root.rglob("*") if f.is_file())
print(sorted(os.listdir(root)), total)
try:
    (root / "missing.txt").read_text()
except FileNotFoundError as e:
    print("FileNotFoundError:", e.strerror, e.filename)
'''),
    Program("io_text_binary", r'''import io
import sys

s = io.StringIO()
s.write("line one\n")
print("line two", file=s)
s.writelines(["three\n", "four\n"])
s.seek(0)
print(s.readline(), end="")
print(s.read().splitlines())
b = io.BytesIO(b"\x00\x01binary\xff")
print(b.read(2), b.tell(), b.read(), b.getbuffer().nbytes)
w = io.TextIOWrapper(io.BytesIO(), encoding="utf-16-le", newline="\r\n")
w.write("hé\nyo\n")
w.flush()
print(w.buffer.getvalue())
with open("mixed.txt", "w", encoding="latin-1", newline="\n") as f:
    f.write("café\r\nnaïve\n")
with open("mixed.txt", "rb") as f:
    print(f.read())
with open("mixed.txt", encoding="latin-1") as f:
    print(f.readlines())
with open("mixed.txt", encoding="utf-8", errors="replace") as f:
    print(repr(f.read()))
sys.stdout.write("written with sys.stdout.write\n")
print("to stderr", file=sys.stderr)
print("a", "b", "c", sep="|", end="!\n")
print("é ü 世界 🙂")
'''),
    Program("encoding_codecs", r'''import codecs

text = "Grüße 世界"
for enc in ["utf-8", "utf-16-le", "latin-1", "ascii", "cp1252", "shift_jis"]:
    try:
        data = text.encode(enc)
        print(f"{enc:<10}{len(data):>3} {data[:12]!r}")
    except UnicodeEncodeError as e:
        print(f"{enc:<10}UnicodeEncodeError at {e.start}-{e.end}: {e.reason}")
print(text.encode("ascii", errors="replace"), text.encode("ascii", errors="xmlcharrefreplace"), text.encode("ascii", "backslashreplace"))
print(b"caf\xe9".decode("utf-8", errors="replace"), b"caf\xe9".decode("latin-1"), b"\xff\xfeh\x00i\x00".decode("utf-16"))
print(codecs.encode("hello", "rot13"), codecs.decode(b"68656c6c6f", "hex"), codecs.lookup("UTF8").name)
try:
    b"\xc3\x28".decode("utf-8")
except UnicodeDecodeError as e:
    print("UnicodeDecodeError:", e)
'''),
    Program("shlex_inspect_types", r'''import inspect
import shlex
from types import SimpleNamespace

print(shlex.split('cmd --name "John Smith" -x \'a b\' path\\ with\\ space # not a comment'))
print(shlex.split("a # comment", comments=True), shlex.quote("it's here"), shlex.join(["ls", "-l", "my file"]))

def api(a, b: int = 2, *args, c, d="x", **kw) -> str:
    """Do the thing.

    More text."""
    return "ok"

sig = inspect.signature(api)
print(sig)
for name, p in sig.parameters.items():
    print(name, p.kind.name, p.default is inspect.Parameter.empty)
print(inspect.getdoc(api).splitlines()[0], inspect.isfunction(api), inspect.isgeneratorfunction(api))
bound = sig.bind(1, c=3)
bound.apply_defaults()
print(bound.arguments)
ns = SimpleNamespace(x=1, y=[2])
ns.z = "three"
print(ns, ns == SimpleNamespace(x=1, y=[2], z="three"))
'''),
    Program("unittest_doctest_run", r'''import doctest
import unittest

def add(a, b):
    """Add numbers.

    >>> add(2, 3)
    5
    >>> add("a", "b")
    'ab'
    >>> add(1, 1)
    3
    """
    return a + b

class TestAdd(unittest.TestCase):
    def test_ints(self):
        self.assertEqual(add(2, 2), 4)
    def test_fail(self):
        self.assertEqual(add(2, 2), 5)
    def test_error(self):
        add(1, None)
    @unittest.skip("not today")
    def test_skipped(self):
        pass

res = doctest.testmod(verbose=False)
print(res)
runner = unittest.TextTestRunner(verbosity=2)
result = runner.run(unittest.defaultTestLoader.loadTestsFromTestCase(TestAdd))
print(result.testsRun, len(result.failures), len(result.errors), len(result.skipped), result.wasSuccessful())
'''),
    Program("sets_dicts_sorted", r'''words = "the quick brown fox jumps over the lazy dog the end".split()
unique = set(words)
print(len(unique), sorted(unique))
a, b = set("abracadabra"), set("alacazam")
print(sorted(a | b), sorted(a & b), sorted(a - b), sorted(a ^ b), a <= a | b)
fs = frozenset({3, 1, 2})
print(sorted(fs), {fs: "frozen"}[frozenset([1, 2, 3])])
index = {}
for i, w in enumerate(words):
    index.setdefault(w[0], set()).add(w)
print({k: sorted(v) for k, v in sorted(index.items())})
d = dict.fromkeys("abc", 0)
d |= {"b": 2, "z": 26}
print(d, list(d.keys())[-1], d.get("q", "none"), d.pop("a"), sorted(d.items(), key=lambda kv: kv[1], reverse=True))
inverted = {v: k for k, v in d.items()}
print(inverted, {n: n * n for n in range(5) if n % 2}, [x for x in sorted({5, 3, 9, 1}) if x > 2])
'''),
]
