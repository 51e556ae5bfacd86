"""LSE's HTTP server: a BlackSheep app over the in-process API (lse.runtime.api).

``lse-server`` (cli.py) runs it under uvicorn; app.py holds the routes,
completions.py and sse.py turn engine events into replies, guard.py cancels a
request whose client left or whose time ran out, auth.py checks the key.
"""
