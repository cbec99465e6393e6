"""How a program runs, rather than what it computes: `__main__`, processes, test
frameworks, stdin, files, large outputs and every kind of end."""

from tests.fidelity.program import Program

MAIN = [
    Program("main_name_guard", "def main():\n    print('ran main')\n\nif __name__ == '__main__':\n    main()\n"),
    Program("main_file_and_argv", "import os, sys\nprint(os.path.basename(__file__), sys.argv)\n"
                                  "print(os.path.dirname(os.path.abspath(__file__)) == os.getcwd())\n"),
    Program("main_module_is_the_program", "import sys, __main__\nx = 41\nprint(__main__.x + 1, sys.modules['__main__'] is __main__)\n"),
    Program("main_module_attributes", "print(__name__, __package__, __spec__, type(__builtins__).__name__, __doc__)\n"
                                      "print(sorted(k for k in globals() if k.startswith('__')))\n"),
    Program("main_docstring", '"""The module docstring."""\nprint(__doc__)\n'),
    Program("main_sys_path_first_is_the_script_dir", "import os, sys\nprint(sys.path[0] == os.getcwd())\n"),
    Program("main_pickle_own_function", "import pickle\n\ndef square(x):\n    return x * x\n\n"
                                        "f = pickle.loads(pickle.dumps(square))\nprint(f(7), f.__module__)\n"),
    Program("main_pickle_own_class", "import pickle\nfrom dataclasses import dataclass\n\n@dataclass\nclass Point:\n"
                                     "    x: int\n    y: int\n\np = pickle.loads(pickle.dumps(Point(1, 2)))\nprint(p, type(p).__module__)\n"),
    Program("main_inspect_getsource", "import inspect\n\ndef add(a, b):\n    # adds\n    return a + b\n\n"
                                      "print(inspect.getsource(add), end='')\nprint(inspect.getsourcefile(add).endswith('main.py'))\n"),
    Program("main_traceback_nested", "def a():\n    b()\n\ndef b():\n    c()\n\ndef c():\n    raise RuntimeError('deep')\n\na()\n"),
    Program("main_traceback_caret", "values = {'a': 1}\ntotal = values['a'] + values['b'] * 2\n"),
    Program("main_exception_chain", "try:\n    int('x')\nexcept ValueError as exc:\n    raise KeyError('wrapped') from exc\n"),
    Program("main_exception_context", "try:\n    1 / 0\nexcept ZeroDivisionError:\n    [][1]\n"),
    Program("main_excepthook", "import sys\n\ndef hook(kind, value, tb):\n    print('custom hook:', kind.__name__, value)\n\n"
                               "sys.excepthook = hook\nraise ValueError('seen by the hook')\n"),
    Program("main_warnings_to_stderr", "import warnings\nwarnings.warn('careful')\nprint('after')\n"),
    Program("main_deprecation_in_main", "import warnings\nwarnings.warn('old', DeprecationWarning)\nprint('done')\n"),
    Program("main_last_expression_prints_nothing", "x = 6 * 7\nx\n"),
    Program("main_del_at_exit", "class Noisy:\n    def __del__(self):\n        print('finalized')\n\nkeep = Noisy()\nprint('end of program')\n"),
    Program("main_atexit_order", "import atexit\natexit.register(print, 'first registered')\n"
                                 "atexit.register(print, 'second registered')\nprint('body')\n"),
    Program("main_atexit_after_exception", "import atexit\natexit.register(print, 'atexit ran')\nraise SystemExit('bye')\n"),
    Program("main_thread_joined_at_exit", "import threading, time\n\ndef late():\n    time.sleep(0.3)\n    print('thread finished')\n\n"
                                          "threading.Thread(target=late).start()\nprint('main finished')\n"),
    Program("main_thread_exception", "import threading\n\ndef boom():\n    raise ValueError('in thread')\n\n"
                                     "t = threading.Thread(target=boom, name='worker')\nt.start()\nt.join()\nprint('main goes on')\n"),
    Program("main_recursion_error", "import sys\nsys.setrecursionlimit(200)\n\ndef f(n):\n    return f(n + 1)\n\nf(0)\n"),
    Program("main_async_main", "import asyncio\n\nasync def main():\n    await asyncio.sleep(0.01)\n    return 'async done'\n\n"
                               "print(asyncio.run(main()))\n"),
    Program("main_import_local_module", "import helper\nprint(helper.greet('you'))\n",
            files={"helper.py": b"def greet(name):\n    return 'hello ' + name\n"}),
    Program("main_import_local_package", "from pkg.sub import value\nprint(value)\n",
            files={"pkg/__init__.py": b"", "pkg/sub.py": b"value = 'from a package'\n"}),
    Program("main_write_and_import_module", "open('made.py', 'w').write('ANSWER = 42\\n')\nimport made\nprint(made.ANSWER)\n"),
    Program("main_runpy_run_path", "import runpy\nopen('other.py', 'w').write('print(__name__)\\n')\nrunpy.run_path('other.py')\n"
                                   "runpy.run_path('other.py', run_name='__main__')\n"),
    Program("main_globals_and_exec", "code = 'y = x * 2'\nx = 21\nexec(code)\nprint(y, eval('x + y'))\n"),
    Program("main_input_prompt", "name = input('name? ')\nprint('hi', name)\n", stdin="ada\n"),
]

PROCESSES = [
    Program("proc_subprocess_python", "import subprocess, sys\n"
                                      "r = subprocess.run([sys.executable, '-c', 'print(6 * 7)'], capture_output=True, text=True)\n"
                                      "print(r.returncode, r.stdout.strip())\n"),
    Program("proc_python3_on_path", "import subprocess\n"
                                    "r = subprocess.run(['python3', '-c', 'import numpy; print(numpy.__name__)'], capture_output=True, text=True)\n"
                                    "print(r.stdout.strip())\n"),
    Program("proc_shell_pipeline", "import subprocess\nr = subprocess.run('printf \"b\\\\na\\\\nc\\\\n\" | sort | tr a-z A-Z', shell=True,"
                                   " capture_output=True, text=True)\nprint(r.stdout, end='')\n"),
    Program("proc_os_system", "import os, sys\nsys.stdout.flush()\nstatus = os.system('echo from the shell')\nprint('status', status)\n"),
    Program("proc_os_popen", "import os\nwith os.popen('echo popen works') as p:\n    print(p.read().strip())\n"),
    Program("proc_check_output", "import subprocess\nprint(subprocess.check_output(['expr', '6', '*', '7']).decode().strip())\n"),
    Program("proc_nonzero_returncode", "import subprocess\nr = subprocess.run(['sh', '-c', 'exit 3'])\nprint('returncode', r.returncode)\n"),
    Program("proc_called_process_error", "import subprocess\nsubprocess.run(['false'], check=True)\n"),
    Program("proc_stdin_to_child", "import subprocess\n"
                                   "r = subprocess.run(['sort', '-n'], input='10\\n2\\n33\\n', capture_output=True, text=True)\n"
                                   "print(r.stdout.split())\n"),
    Program("proc_child_inherits_stdout", "import subprocess, sys\nprint('before', flush=True)\n"
                                          "subprocess.run([sys.executable, '-c', 'print(\"child line\")'])\nprint('after')\n"),
    Program("proc_child_stderr", "import subprocess, sys\n"
                                 "subprocess.run([sys.executable, '-c', 'import sys; sys.stderr.write(\"child err\\\\n\")'])\n"
                                 "print('parent done')\n"),
    Program("proc_timeout_expired", "import subprocess\ntry:\n    subprocess.run(['sleep', '5'], timeout=0.2)\n"
                                    "except subprocess.TimeoutExpired as exc:\n    print('timed out:', type(exc).__name__)\n"),
    Program("proc_env_to_child", "import os, subprocess\nenv = dict(os.environ, GREETING='hello child')\n"
                                 "print(subprocess.run(['sh', '-c', 'echo $GREETING'], env=env, capture_output=True, text=True).stdout.strip())\n"),
    Program("proc_multiprocessing_pool", "from multiprocessing import Pool\n\ndef square(x):\n    return x * x\n\n"
                                         "if __name__ == '__main__':\n    with Pool(2) as pool:\n        print(pool.map(square, range(10)))\n"),
    Program("proc_multiprocessing_process_queue", "from multiprocessing import Process, Queue\n\ndef work(q, n):\n"
                                                  "    q.put(sum(range(n)))\n\nif __name__ == '__main__':\n    q = Queue()\n"
                                                  "    procs = [Process(target=work, args=(q, n)) for n in (10, 100, 1000)]\n"
                                                  "    for p in procs:\n        p.start()\n    for p in procs:\n        p.join()\n"
                                                  "    print(sorted(q.get() for _ in procs), [p.exitcode for p in procs])\n"),
    Program("proc_multiprocessing_pipe", "from multiprocessing import Pipe, Process\n\ndef echo(conn):\n"
                                         "    conn.send(conn.recv().upper())\n\nif __name__ == '__main__':\n"
                                         "    a, b = Pipe()\n    p = Process(target=echo, args=(b,))\n    p.start()\n"
                                         "    a.send('through a pipe')\n    print(a.recv())\n    p.join()\n"),
    Program("proc_multiprocessing_value_array", "from multiprocessing import Array, Process, Value\n\n"
                                                "def bump(v, a):\n    with v.get_lock():\n        v.value += 1\n    with a.get_lock():\n        a[0] += 1\n\n"
                                                "if __name__ == '__main__':\n    v, a = Value('i', 0), Array('i', [0, 0])\n"
                                                "    ps = [Process(target=bump, args=(v, a)) for _ in range(3)]\n"
                                                "    [p.start() for p in ps]\n    [p.join() for p in ps]\n    print(v.value, a[:])\n"),
    Program("proc_multiprocessing_lock_semaphore", "import multiprocessing as mp\n\nif __name__ == '__main__':\n"
                                                   "    lock, sem, event = mp.Lock(), mp.Semaphore(2), mp.Event()\n"
                                                   "    with lock:\n        print('locked')\n    sem.acquire(); sem.acquire()\n"
                                                   "    print(sem.acquire(timeout=0.05))\n    event.set()\n    print(event.is_set())\n"),
    Program("proc_multiprocessing_child_prints", "from multiprocessing import Process\n\ndef say(i):\n    print('child', i, flush=True)\n\n"
                                                 "if __name__ == '__main__':\n    for i in range(3):\n        p = Process(target=say, args=(i,))\n"
                                                 "        p.start()\n        p.join()\n    print('parent done')\n"),
    Program("proc_multiprocessing_child_exception", "from multiprocessing import Process\n\ndef fail():\n    raise ValueError('child failed')\n\n"
                                                    "if __name__ == '__main__':\n    p = Process(target=fail)\n    p.start()\n    p.join()\n"
                                                    "    print('exitcode', p.exitcode)\n"),
    Program("proc_spawn_start_method", "import multiprocessing as mp\n\ndef triple(x):\n    return 3 * x\n\n"
                                       "if __name__ == '__main__':\n    ctx = mp.get_context('spawn')\n"
                                       "    with ctx.Pool(2) as pool:\n        print(pool.map(triple, [1, 2, 3]))\n"),
    Program("proc_process_pool_executor", "from concurrent.futures import ProcessPoolExecutor\n\ndef cube(x):\n    return x ** 3\n\n"
                                          "if __name__ == '__main__':\n    with ProcessPoolExecutor(max_workers=2) as ex:\n"
                                          "        print(list(ex.map(cube, range(6))))\n"),
    Program("proc_joblib_loky", "from joblib import Parallel, delayed\nimport math\n\n"
                                "print(Parallel(n_jobs=2)(delayed(math.factorial)(n) for n in range(8)))\n"),
    Program("proc_sklearn_n_jobs", "from sklearn.datasets import load_iris\nfrom sklearn.linear_model import LogisticRegression\n"
                                   "from sklearn.model_selection import cross_val_score\nX, y = load_iris(return_X_y=True)\n"
                                   "scores = cross_val_score(LogisticRegression(max_iter=500), X, y, cv=3, n_jobs=2)\n"
                                   "print([round(s, 4) for s in scores])\n"),
    Program("proc_os_fork_wait", "import os\npid = os.fork()\nif pid == 0:\n    os._exit(7)\n_, status = os.waitpid(pid, 0)\n"
                                 "print('child exit', os.waitstatus_to_exitcode(status))\n"),
    Program("proc_fork_buffered_output_once", "import os\nprint('printed once')\npid = os.fork()\nif pid == 0:\n    os._exit(0)\n"
                                              "os.waitpid(pid, 0)\n"),
    Program("proc_subprocess_of_written_script", "import os, subprocess\nopen('run.sh', 'w').write('#!/bin/sh\\necho script ran\\n')\n"
                                                 "os.chmod('run.sh', 0o755)\nprint(subprocess.run(['./run.sh'], capture_output=True, text=True).stdout.strip())\n"),
    Program("proc_signal_alarm", "import signal, time\n\ndef on_alarm(signum, frame):\n    raise TimeoutError('alarm')\n\n"
                                 "signal.signal(signal.SIGALRM, on_alarm)\nsignal.setitimer(signal.ITIMER_REAL, 0.05)\ntry:\n"
                                 "    time.sleep(2)\nexcept TimeoutError as exc:\n    print('caught', exc)\n"),
]

TESTS = [
    Program("unittest_main_passes", "import unittest\n\nclass T(unittest.TestCase):\n    def test_add(self):\n"
                                    "        self.assertEqual(1 + 1, 2)\n\nif __name__ == '__main__':\n    unittest.main()\n"),
    Program("unittest_main_fails", "import unittest\n\nclass T(unittest.TestCase):\n    def test_wrong(self):\n"
                                   "        self.assertEqual(sorted([3, 1]), [3, 1])\n\n    def test_right(self):\n"
                                   "        self.assertTrue(True)\n\nunittest.main()\n"),
    Program("unittest_main_no_exit", "import unittest\n\nclass T(unittest.TestCase):\n    def test_bad(self):\n"
                                     "        self.assertIn(4, [1, 2])\n\nresult = unittest.main(argv=['x'], exit=False).result\n"
                                     "print('ran', result.testsRun, 'failures', len(result.failures))\n"),
    Program("unittest_error_and_skip", "import unittest\n\nclass T(unittest.TestCase):\n    def test_error(self):\n"
                                       "        {}['missing']\n\n    @unittest.skip('not today')\n    def test_skipped(self):\n"
                                       "        pass\n\n    @unittest.expectedFailure\n    def test_expected(self):\n"
                                       "        self.assertEqual(1, 2)\n\nunittest.main(verbosity=2)\n"),
    Program("unittest_subtests", "import unittest\n\nclass T(unittest.TestCase):\n    def test_even(self):\n"
                                 "        for n in range(4):\n            with self.subTest(n=n):\n"
                                 "                self.assertEqual(n % 2, 0)\n\nunittest.main()\n"),
    Program("unittest_setup_teardown", "import unittest\n\nclass T(unittest.TestCase):\n    @classmethod\n"
                                       "    def setUpClass(cls):\n        print('setUpClass')\n\n    def setUp(self):\n"
                                       "        self.items = [1, 2]\n\n    def test_len(self):\n        self.assertEqual(len(self.items), 2)\n\n"
                                       "    def tearDown(self):\n        print('tearDown')\n\nunittest.main()\n"),
    Program("unittest_runner_to_stdout", "import sys, unittest\n\nclass T(unittest.TestCase):\n    def test_a(self):\n"
                                         "        self.assertAlmostEqual(0.1 + 0.2, 0.3)\n\n"
                                         "suite = unittest.defaultTestLoader.loadTestsFromTestCase(T)\n"
                                         "unittest.TextTestRunner(stream=sys.stdout, verbosity=2).run(suite)\n"),
    Program("doctest_testmod_passes", 'def double(x):\n    """\n    >>> double(21)\n    42\n    """\n    return 2 * x\n\n'
                                      'import doctest\nprint(doctest.testmod())\n'),
    Program("doctest_testmod_fails", 'def half(x):\n    """\n    >>> half(3)\n    1.5\n    >>> half(4)\n    3\n    """\n'
                                     '    return x / 2\n\nimport doctest\ndoctest.testmod()\n'),
    Program("doctest_verbose", 'def inc(x):\n    """\n    >>> inc(1)\n    2\n    """\n    return x + 1\n\n'
                               'if __name__ == "__main__":\n    import doctest\n    doctest.testmod(verbose=True)\n'),
    Program("assert_passes", "def gcd(a, b):\n    while b:\n        a, b = b, a % b\n    return a\n\n"
                             "assert gcd(12, 18) == 6\nassert gcd(7, 3) == 1\nprint('all asserts passed')\n"),
    Program("assert_fails_with_message", "def is_prime(n):\n    return n > 1 and all(n % d for d in range(2, n))\n\n"
                                         "assert is_prime(7)\nassert is_prime(9), 'nine is not prime'\n"),
    Program("assert_fails_bare", "result = sum([1, 2, 3])\nassert result == 7\n"),
    Program("humaneval_style_check", "def candidate(xs):\n    return sorted(set(xs))\n\ndef check(f):\n"
                                     "    assert f([3, 1, 3]) == [1, 3]\n    assert f([]) == []\n\ncheck(candidate)\nprint('passed')\n"),
    Program("pytest_main_on_itself_passes", "import sys\nimport pytest\n\ndef test_one():\n    assert 1 + 1 == 2\n\n"
                                            "def test_two():\n    assert 'a'.upper() == 'A'\n\nif __name__ == '__main__':\n"
                                            "    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))\n"),
    Program("pytest_main_on_itself_fails", "import sys\nimport pytest\n\ndef test_bad():\n    assert [1, 2] == [1, 3]\n\n"
                                           "if __name__ == '__main__':\n"
                                           "    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider', '--tb=short']))\n"),
    Program("pytest_raises_and_parametrize", "import sys\nimport pytest\n\n@pytest.mark.parametrize('n', [1, 2, 3])\n"
                                             "def test_positive(n):\n    assert n > 0\n\ndef test_raises():\n"
                                             "    with pytest.raises(ZeroDivisionError):\n        1 / 0\n\nif __name__ == '__main__':\n"
                                             "    sys.exit(pytest.main([__file__, '-q', '-p', 'no:cacheprovider']))\n"),
]

STDIN = [
    Program("stdin_input_lines", "n = int(input())\nnums = list(map(int, input().split()))\nprint(sum(nums[:n]))\n",
            stdin="3\n4 5 6 7\n"),
    Program("stdin_read_all", "import sys\ndata = sys.stdin.read().split()\nprint(len(data), max(map(int, data)))\n",
            stdin="5 9 2\n8 1\n"),
    Program("stdin_readline_loop", "import sys\nfor line in sys.stdin:\n    print(line.rstrip()[::-1])\n", stdin="abc\nhello\n"),
    Program("stdin_no_trailing_newline", "import sys\nprint(repr(sys.stdin.read()))\n", stdin="last line"),
    Program("stdin_crlf_kept", "import sys\nprint(repr(sys.stdin.read()))\n", stdin="a\r\nb\r\n"),
    Program("stdin_eof_error", "first = input()\nsecond = input()\nprint(first, second)\n", stdin="only one\n"),
    Program("stdin_empty", "import sys\nprint(repr(sys.stdin.read()), sys.stdin.isatty())\n"),
    Program("stdin_unicode", "s = input()\nprint(s.upper(), len(s))\n", stdin="grüße, 世界\n"),
    Program("stdin_binary_buffer", "import sys\ndata = sys.stdin.buffer.read()\nprint(list(data[:6]), len(data))\n",
            stdin="héllo\n"),
    Program("stdin_many_lines", "import sys\nlines = sys.stdin.read().splitlines()\nprint(len(lines), sum(map(int, lines)))\n",
            stdin="".join(f"{i}\n" for i in range(20000))),
    Program("stdin_fileinput", "import fileinput\nprint(sum(int(line) for line in fileinput.input()))\n", stdin="1\n2\n3\n"),
    Program("stdin_competitive_fast_io", "import sys\ninput = sys.stdin.readline\nt = int(input())\nout = []\n"
                                         "for _ in range(t):\n    a, b = map(int, input().split())\n    out.append(str(a * b))\n"
                                         "sys.stdout.write('\\n'.join(out) + '\\n')\n", stdin="3\n2 3\n4 5\n6 7\n"),
    Program("stdin_encoding_info", "import sys\nprint(sys.stdin.encoding, sys.stdout.encoding, sys.stderr.encoding)\n"
                                   "print(sys.stdout.errors, sys.stderr.errors, sys.stdout.line_buffering, sys.stderr.line_buffering)\n"),
]

FILES = [
    Program("files_write_read", "with open('notes.txt', 'w') as f:\n    f.write('line one\\nline two\\n')\n"
                                "print(open('notes.txt').read().splitlines())\n"),
    Program("files_listdir_cwd", "import os\nopen('a.txt', 'w').close()\nos.mkdir('sub')\nprint(sorted(os.listdir('.')))\n"),
    Program("files_given_file", "print(open('data.csv').read().strip().splitlines()[-1])\n",
            files={"data.csv": b"x,y\n1,2\n3,4\n"}),
    Program("files_given_nested", "import os\nprint(sorted(os.path.relpath(os.path.join(r, f)) for r, _, fs in os.walk('.') for f in fs))\n",
            files={"in/a.txt": b"a", "in/deep/b.txt": b"b"}),
    Program("files_tmp_dir", "import os\nopen('/tmp/scratch.txt', 'w').write('in tmp')\nprint(open('/tmp/scratch.txt').read())\n"
                             "os.remove('/tmp/scratch.txt')\n"),
    Program("files_tempfile", "import os, tempfile\nwith tempfile.TemporaryDirectory() as d:\n"
                              "    p = os.path.join(d, 'x')\n    open(p, 'w').write('temp')\n    print(open(p).read(), os.path.isdir(d))\n"
                              "with tempfile.NamedTemporaryFile('w+') as f:\n    f.write('named')\n    f.seek(0)\n    print(f.read())\n"),
    Program("files_missing_file_error", "open('does-not-exist.txt').read()\n"),
    Program("files_permission_error", "import os\nopen('locked.txt', 'w').write('x')\nos.chmod('locked.txt', 0)\n"
                                      "try:\n    open('locked.txt').read()\nexcept PermissionError as exc:\n    print('refused:', exc.strerror)\n"),
    Program("files_pathlib_glob", "from pathlib import Path\nfor n in ['b.py', 'a.py', 'c.txt']:\n    Path(n).write_text(n)\n"
                                  "print(sorted(p.name for p in Path('.').glob('*.py')))\n"),
    Program("files_shutil", "import os, shutil\nos.makedirs('src/inner')\nopen('src/inner/f.txt', 'w').write('copied')\n"
                            "shutil.copytree('src', 'dst')\nprint(open('dst/inner/f.txt').read())\nshutil.rmtree('src')\nprint(os.path.exists('src'))\n"),
    Program("files_dev_shm", "import os\nwith open('/dev/shm/shared', 'wb') as f:\n    f.write(b'\\x00' * 4096)\n"
                             "print(os.path.getsize('/dev/shm/shared'))\nos.remove('/dev/shm/shared')\n"),
    Program("files_mmap", "import mmap\nwith open('m.bin', 'wb') as f:\n    f.write(b'hello mmap')\nwith open('m.bin', 'r+b') as f:\n"
                          "    m = mmap.mmap(f.fileno(), 0)\n    m[:5] = b'HELLO'\n    print(m[:].decode())\n    m.close()\n"),
    Program("files_home_is_writable", "import os\nopen(os.path.expanduser('~/.config-test'), 'w').write('ok')\n"
                                      "print(open(os.path.expanduser('~/.config-test')).read())\n"),
    Program("files_open_write_binary_read_text_error", "open('b.bin', 'wb').write(b'\\xff\\xfe')\nopen('b.bin').read()\n"),
]

OUTPUTS = [
    Program("output_order_stdout_stderr", "import sys\nprint('out 1')\nprint('err 1', file=sys.stderr)\nprint('out 2')\n"
                                          "sys.stderr.write('err 2\\n')\n"),
    Program("output_no_newline", "print('no newline at the end', end='')\n"),
    Program("output_unicode", "print('π ≈ 3.14159, naïve café, 中文, 🙂')\n"),
    Program("output_surrogate_error", "print('\\udc80')\n"),
    Program("output_bytes_to_buffer", "import sys\nsys.stdout.buffer.write(bytes(range(32, 127)))\nsys.stdout.buffer.write(b'\\n')\n"),
    Program("output_stderr_unicode", "import sys\nprint('ünïcödé on stderr', file=sys.stderr)\n"),
    Program("output_50kb", "for i in range(5000):\n    print(f'line {i:05d}')\n"),
    Program("output_long_line", "print('x' * 60000)\n"),
    Program("output_flush_interleaving", "import sys\nfor i in range(5):\n    print(i, flush=True)\n    print(-i, file=sys.stderr)\n"),
    Program("output_pprint_big", "from pprint import pprint\npprint({f'key{i}': list(range(i)) for i in range(30)})\n"),
    Program("output_carriage_returns", "print('50%\\r100%')\nprint('tab\\tseparated')\n"),
    Program("output_print_sep_end_file", "import io, sys\nbuf = io.StringIO()\nprint(1, 2, 3, sep='-', end='!\\n', file=buf)\n"
                                         "sys.stdout.write(buf.getvalue())\n"),
]

EXITS = [
    Program("exit_normal", "print('done')\n"),
    Program("exit_zero", "import sys\nprint('before exit')\nsys.exit(0)\nprint('never')\n"),
    Program("exit_code", "import sys\nprint('failing on purpose')\nsys.exit(3)\n"),
    Program("exit_message", "import sys\nsys.exit('fatal: bad input')\n"),
    Program("exit_none", "raise SystemExit\n"),
    Program("exit_large_code", "import sys\nsys.exit(258)\n"),
    Program("exit_bool", "import sys\nsys.exit(True)\n"),
    Program("exit_in_function_finally", "import sys\n\ndef run():\n    try:\n        sys.exit(5)\n    finally:\n"
                                        "        print('finally ran')\n\nrun()\n"),
    Program("exit_caught_system_exit", "import sys\ntry:\n    sys.exit(9)\nexcept SystemExit as exc:\n    print('caught', exc.code)\n"),
    Program("exit_os_exit_after_flush", "import os, sys\nprint('flushed first', flush=True)\nos._exit(4)\n"),
    Program("exit_os_exit_keeps_stderr", "import os, sys\ntry:\n    1 / 0\nexcept Exception as exc:\n"
                                         "    print(f'error: {exc}', file=sys.stderr)\n    os._exit(1)\n"),
    Program("exit_os_exit_unflushed", "import os\nprint('printed, never flushed')\nos._exit(2)\n", abrupt=True),
    Program("exit_uncaught_exception", "def parse(s):\n    return int(s)\n\nprint('parsing')\nparse('twelve')\n"),
    Program("exit_keyboard_interrupt", "print('about to be interrupted')\nraise KeyboardInterrupt\n"),
    Program("exit_sigterm_self", "import os, signal, sys\nprint('flushed', flush=True)\nos.kill(os.getpid(), signal.SIGTERM)\n"),
    Program("exit_sigusr1_self", "import os, signal\nprint('flushed', flush=True)\nos.kill(os.getpid(), signal.SIGUSR1)\n"),
    Program("sigusr1_handled", "import os, signal\nsignal.signal(signal.SIGUSR1, lambda n, f: print('caught', n))\n"
                               "os.kill(os.getpid(), signal.SIGUSR1)\nprint('after')\n"),
    Program("exit_abort", "import os, sys\nprint('aborting', file=sys.stderr)\nos.abort()\n"),
    Program("exit_syntax_error", "def f(:\n    pass\n"),
    Program("exit_indentation_error", "if True:\nprint('not indented')\n"),
    Program("exit_name_error", "print(undefined_name)\n"),
    Program("exit_failed_import", "print('before')\nimport a_module_nobody_installed\n"),
    Program("exit_failed_import_in_a_module", "import helper\n",
            files={"helper.py": b"x = 1\nimport a_dependency_nobody_installed\n"}),
    Program("exit_failed_from_import", "from math import a_name_math_lacks\n"),
    Program("exit_failed_import_chained", "try:\n    import a_module_nobody_installed\nexcept ImportError as exc:\n"
                                          "    raise RuntimeError('no plugin') from exc\n"),
    Program("exit_unicode_message", "raise ValueError('bad value: ∅')\n"),
    Program("exit_memory_error", "data = bytearray(10 ** 13)\n"),
    Program("exit_after_output_both_streams", "import sys\nprint('partial result 1')\nprint('warning text', file=sys.stderr)\n"
                                              "raise RuntimeError('late failure')\n"),
    Program("exit_error_in_atexit", "import atexit\n\ndef broken():\n    raise ValueError('in atexit')\n\natexit.register(broken)\n"
                                    "print('body ran')\n"),
    Program("exit_sys_exit_in_thread", "import sys, threading\nt = threading.Thread(target=sys.exit, args=(7,))\nt.start()\n"
                                       "t.join()\nprint('main still runs')\n"),
    Program("exit_time_limit_loop", "print('started', flush=False)\nwhile True:\n    pass\n", timeout_ms=1500, times_out=True),
    Program("exit_time_limit_sleep", "import time\nprint('going to sleep')\ntime.sleep(60)\n", timeout_ms=1500, times_out=True),
    Program("exit_time_limit_input_wait", "import sys, time\nprint('waiting on a child')\nimport subprocess\n"
                                          "subprocess.run(['sleep', '60'])\n", timeout_ms=1500, times_out=True),
]

PROGRAMS = MAIN + PROCESSES + TESTS + STDIN + FILES + OUTPUTS + EXITS

# What the jail forbids on purpose, so a plain python3 and the server differ: Unix-domain
# sockets (a host daemon's socket could be reached through one), which
# multiprocessing's Manager and its forkserver start method listen on. Each fails with a
# clear PermissionError instead.
JAIL_REFUSES = [
    Program("proc_manager", "from multiprocessing import Manager\n\nif __name__ == '__main__':\n"
                            "    with Manager() as m:\n        d = m.dict(a=1)\n        print(dict(d))\n"),
    Program("proc_forkserver_start_method", "import multiprocessing as mp\n\ndef neg(x):\n    return -x\n\n"
                                            "if __name__ == '__main__':\n    ctx = mp.get_context('forkserver')\n"
                                            "    with ctx.Pool(2) as pool:\n        print(pool.map(neg, [1, 2]))\n"),
]
