import time, sqlite3, statistics, sys, tempfile, re
sys.path.insert(0, '/work/main')
from bench.textpool import chunk_texts, hotpot_records
import tantivy
N=int(sys.argv[1])
texts=chunk_texts(N)
qs=[r['question'] for r in hotpot_records()][:200]
d=tempfile.mkdtemp()
def words(q): return [w for w in re.findall(r"\w+", q.lower()) if len(w)>2]
# tantivy
sb=tantivy.SchemaBuilder(); sb.add_text_field("id", stored=True, tokenizer_name="raw"); sb.add_text_field("text", stored=False, tokenizer_name="en_stem"); schema=sb.build()
idx=tantivy.Index(schema, path=d+"/t" if __import__('os').makedirs(d+"/t") is None else None)
t=time.time(); w=idx.writer(heap_size=128_000_000)
for i,x in enumerate(texts): w.add_document(tantivy.Document(id=str(i), text=x))
w.commit(); w.wait_merging_threads(); idx.reload(); print("tantivy build", time.time()-t)
s=idx.searcher(); lat=[]
for q in qs:
    t=time.perf_counter(); qq=idx.parse_query(" ".join(words(q)), ["text"]); r=s.search(qq, 50).hits; lat.append((time.perf_counter()-t)*1000)
print("tantivy p50 %.2f p95 %.2f ms"%(statistics.median(lat), sorted(lat)[int(.95*len(lat))]))
# fts5
con=sqlite3.connect(d+"/f.db"); con.execute("create virtual table c using fts5(text, tokenize='porter unicode61')")
t=time.time(); con.executemany("insert into c(rowid,text) values (?,?)", enumerate(texts)); con.commit(); print("fts5 build", time.time()-t)
lat=[]
for q in qs:
    t=time.perf_counter(); m=" OR ".join('"%s"'%x for x in words(q)); r=con.execute("select rowid from c where c match ? order by bm25(c) limit 50",(m,)).fetchall(); lat.append((time.perf_counter()-t)*1000)
print("fts5 p50 %.2f p95 %.2f ms"%(statistics.median(lat), sorted(lat)[int(.95*len(lat))]))
