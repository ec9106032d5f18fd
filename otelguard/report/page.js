// otelguard's HTML report. Every string in the data blocks is untrusted: it reaches the page only as
// text (textContent), never as markup, attribute, URL or handler. Ids and links are made of numbers.
(function () {
  'use strict';

  function el(tag, cls, text) {
    var node = document.createElement(tag);
    if (cls) node.className = cls;
    if (text !== undefined && text !== null) node.textContent = String(text);
    return node;
  }
  function add(parent) {
    for (var i = 1; i < arguments.length; i++) {
      var child = arguments[i];
      if (child === null || child === undefined) continue;
      parent.appendChild(typeof child === 'string' ? document.createTextNode(child) : child);
    }
    return parent;
  }
  function data(id) {
    var node = document.getElementById(id);
    return node ? JSON.parse(node.textContent) : null;
  }
  function link(href, text, cls) {  // href: '#' and numbers only
    var a = el('a', cls, text);
    a.setAttribute('href', href);
    return a;
  }
  function num(n) { return n === null || n === undefined ? '–' : Number(n).toLocaleString('en-US'); }
  function usd(n) {
    if (n === null || n === undefined) return null;
    return '$' + Number(n).toLocaleString('en-US', {minimumFractionDigits: 2, maximumFractionDigits: n < 1 ? 4 : 2});
  }
  function ms(n) {
    if (n === null || n === undefined) return '–';
    if (n < 1000) return Math.round(n) + ' ms';
    if (n < 60000) return (n / 1000).toFixed(1) + ' s';
    return (n / 60000).toFixed(1) + ' min';
  }
  function spendText(spend) {  // [in, out, usd, unpriced]
    if (!spend) return 'cost: –';
    var parts = [];
    if (spend[0] !== null || spend[1] !== null) parts.push(num(spend[0]) + ' tokens in, ' + num(spend[1]) + ' out');
    parts.push(spend[2] !== null ? usd(spend[2]) : 'no USD price' + (spend[3] ? ' (' + spend[3] + ')' : ''));
    return 'cost: ' + parts.join(', ');
  }
  function badge(action) {
    var known = ['none', 'remind', 'warn', 'steer', 'block', 'abort', 'break', 'cancel'];
    var name = known.indexOf(action) >= 0 ? action : 'none';
    return el('span', 'badge a-' + name, action);
  }

  // The live page (otelguard serve) fetches the same data from its own origin instead of reading it
  // from blocks: og-live names the paths; its runs carry [16] session, [17] version, [18] paused.
  var live = data('og-live');
  var head = live ? null : data('og-head');
  var runs = live ? [] : data('og-runs');  // [number, label, key, runs, model, tool, acting, flagged, loops, in, out, usd, unpriced, ms, timeline, dropped]
  var verdicts = live ? [] : data('og-verdicts');  // [run, id, step, kind, guard, verdict, rule, action, message, evidence, counts, outcome, after, spend]
  var byRun = {};
  var details = {};  // live: run number -> its fetched {run, verdicts, episodes, steps}
  verdicts.forEach(function (v) { (byRun[v[0]] = byRun[v[0]] || []).push(v); });
  function runData(number) {  // a run's {episodes, steps}
    return live ? details[number] || null : data('og-run-' + number);
  }

  // --- summary ----------------------------------------------------------------------------------
  function summary() {
    var root = document.getElementById('summary');
    root.textContent = '';
    var c = head.counts, t = head.totals;
    add(root, el('h2', null, 'Summary'));
    if (!live) {
      var files = el('details', 'files');
      add(files, el('summary', 'muted', num(head.files.length) + ' input file(s)'), el('pre', 'block', head.files.join('\n')));
      add(root, files);
    }
    var cards = el('div', 'cards');
    function card(value, label) { add(cards, add(el('div', 'card'), el('b', null, value), el('span', null, label))); }
    if (live) {
      card(num(c.sessions), 'sessions held');
      card(num(c.steps), 'steps judged since start');
      card(num(c.evicted), 'sessions forgotten (over ' + num(head.bounds.sessions) + ')');
    } else {
      card(num(c.runs), 'runs');
      card(num(c.agents), 'agents');
      card(num(c.steps), 'steps judged');
    }
    card(num(t.acting), 'verdicts that acted');
    card(num(t.loops), 'loops acted on');
    card(num(t.spend[0]) + ' / ' + num(t.spend[1]), 'loop tokens in / out');
    card(t.spend[2] !== null ? usd(t.spend[2]) : '–', 'loop cost (USD, where priced)');
    card(num(t.stopped) + ' / ' + num(t.continued), 'stopped / continued after a verdict');
    add(root, cards);
    if (head.incomplete) add(root, el('p', 'warn', '⚠ verdict scope: INCOMPLETE: the verdicts cover only what was read (see coverage)'));
    add(root, el('h3', null, 'Loops by guard and rule'));
    if (!head.rules.length) {
      add(root, el('p', 'muted', 'No verdict acted.'));
    } else {
      var table = el('table'), hrow = el('tr');
      ['guard', 'rule', 'verdicts that acted', 'actions', 'stopped', 'continued', 'loops', 'tokens in', 'tokens out', 'cost']
        .forEach(function (h, i) { add(hrow, el('th', i >= 2 && i !== 3 ? 'num' : null, h)); });
      add(table, add(el('thead'), hrow));
      var body = el('tbody');
      head.rules.forEach(function (r) {
        var actions = Object.keys(r.actions).map(function (a) { return a + ' ' + r.actions[a]; }).join(', ');
        var cost = r.spend[2] !== null ? usd(r.spend[2]) : '–';
        if (r.spend[3]) cost += ' (' + r.spend[3] + ' unpriced)';
        var row = el('tr');
        [r.guard, r.rule, num(r.acting), actions, num(r.stopped), num(r.continued), num(r.loops), num(r.spend[0]),
         num(r.spend[1]), cost].forEach(function (v, i) { add(row, el('td', i >= 2 && i !== 3 ? 'num' : null, v)); });
        add(body, row);
      });
      add(root, add(table, body));
      add(root, el('p', 'help', '"stopped": none of the next 5 calls of its kind went on with the loop; "continued": one did.' +
          (live ? ' A loop\'s tokens and cost join its rule\'s row when it ends; the cards count loops under way too.' : '')));
    }
    if (live) return;
    add(root, el('h3', null, 'The analyzer\'s summary'));
    add(root, el('pre', 'block', head.summary.join('\n')));
    add(root, el('h3', null, 'Coverage'));
    var cov = el('pre', 'block');
    head.coverage.forEach(function (line) {
      add(cov, line[1] ? el('span', 'warn', line[0]) : line[0], '\n');
    });
    add(root, cov);
  }

  // --- index ------------------------------------------------------------------------------------
  var filterBox, sortBox, indexBody, indexTitle;
  function index() {
    var root = document.getElementById('index');
    indexTitle = el('h2', null, (live ? 'Sessions' : 'Runs') + ' (' + num(runs.length) + ')');
    add(root, indexTitle);
    var controls = el('div', 'controls');
    filterBox = el('input');
    filterBox.type = 'checkbox';
    filterBox.id = 'only-loops';
    var label = el('label', null, ' only runs with loops');
    label.htmlFor = 'only-loops';
    sortBox = el('select');
    sortBox.id = 'sort';
    [['input', 'input order'], ['cost', 'loop cost, highest first']].forEach(function (o) {
      var option = el('option', null, o[1]);
      option.value = o[0];
      add(sortBox, option);
    });
    var sortLabel = el('label', null, 'sort by ');
    sortLabel.htmlFor = 'sort';
    add(controls, add(el('span'), filterBox, label), add(el('span'), sortLabel, sortBox));
    add(root, controls);
    add(root, el('p', 'help', 'Runs with a verdict that acted link to their timeline; the others are listed here only, with their counts.'));
    var table = el('table');
    table.id = 'run-index';
    var hrow = el('tr');
    ['#', 'run', 'agent runs', 'model calls', 'tool calls', 'acted', 'flagged', 'loops', 'loop tokens in / out', 'loop cost', 'duration']
      .forEach(function (h, i) { add(hrow, el('th', i >= 2 ? 'num' : null, h)); });
    add(table, add(el('thead'), hrow));
    indexBody = el('tbody');
    add(root, add(table, indexBody));
    filterBox.addEventListener('change', drawIndex);
    sortBox.addEventListener('change', drawIndex);
    drawIndex();
  }
  function costKey(r) { return [r[11] === null ? -1 : r[11], (r[9] || 0) + (r[10] || 0)]; }
  function pausedBadge(r) {
    return live && r[18] ? el('span', 'badge paused', 'paused') : null;
  }
  function drawIndex() {
    indexTitle.textContent = (live ? 'Sessions' : 'Runs') + ' (' + num(runs.length) + ')';
    var rows = runs.slice();
    if (filterBox.checked) rows = rows.filter(function (r) { return r[8] > 0 || r[6] > 0; });
    if (sortBox.value === 'cost') {
      rows.sort(function (a, b) {
        var x = costKey(a), y = costKey(b);
        return y[0] - x[0] || y[1] - x[1] || a[0] - b[0];
      });
    }
    var body = el('tbody');
    rows.forEach(function (r) {
      var row = el('tr');
      row.className = r[14] ? 'has-timeline' : 'index-only';
      var name = r[1] || r[2];
      var first = r[14] ? link('#run-' + r[0], '#' + r[0]) : el('span', 'muted', '#' + r[0]);
      var cost = r[8] ? (r[11] !== null ? usd(r[11]) : 'no USD price') : '–';
      add(row, add(el('td'), first), add(el('td'), r[14] ? link('#run-' + r[0], name) : name, pausedBadge(r)));
      if (live && r[18]) row.classList.add('is-paused');
      [num(r[3]), num(r[4]), num(r[5]), num(r[6]), num(r[7]), num(r[8]),
       r[8] ? num(r[9]) + ' / ' + num(r[10]) : '–', cost, ms(r[13])]
        .forEach(function (v) { add(row, el('td', 'num', v)); });
      add(body, row);
    });
    indexBody.replaceWith(body);
    indexBody = body;
  }

  // --- runs -------------------------------------------------------------------------------------
  var sections = {};
  function makeSection(r) {
    var section = el('section', 'run');
    section.id = 'run-' + r[0];
    var name = el('span', 'run-name', r[1] || r[2]);
    var marker = el('span');
    var title = add(el('h3'), 'Run #' + r[0] + ': ', name, marker, link('#run-' + r[0], '¶', 'perma'));
    var facts = el('p', 'muted');
    var dropped = el('p', 'muted');
    var list = el('ol', 'verdicts');
    var toggle = el('button', 'show', 'Show the timeline');
    toggle.type = 'button';
    var box = el('div', 'timeline-box');
    toggle.addEventListener('click', function () { drawTimeline(r[0]); });
    add(section, title, facts, dropped, list, toggle, box);
    var s = {section: section, box: box, toggle: toggle, drawn: false, facts: facts, dropped: dropped, list: list,
             marker: marker, version: null};
    sections[r[0]] = s;
    return s;
  }
  function fillSection(s, r) {
    s.marker.textContent = '';
    add(s.marker, pausedBadge(r));
    s.facts.textContent = num(r[4]) + ' model calls, ' + num(r[5]) + ' tool calls, ' + num(r[3]) + ' agent run(s), ' +
      ms(r[13]) + '; key: ';
    add(s.facts, el('span', null, r[2]));
    if (live && r[16] !== null) add(s.facts, '; session: ', el('span', 'session', r[16]));
    s.dropped.textContent = !r[15] ? '' : live
      ? num(r[15]) + ' earlier steps are not kept (the last ' + num(head.bounds.steps) + ' of a session are).'
      : num(r[15]) + ' earlier steps (of agent runs that ended without a verdict that acted) are not kept.';
    var list = el('ol', 'verdicts');
    (byRun[r[0]] || []).forEach(function (v) { add(list, verdictItem(v)); });
    s.list.replaceWith(list);
    s.list = list;
  }
  function runSections() {
    var root = document.getElementById('runs');
    var withTimeline = runs.filter(function (r) { return r[14]; });
    add(root, el('h2', null, 'Runs with a verdict that acted (' + withTimeline.length + ')'));
    withTimeline.forEach(function (r) {
      var s = makeSection(r);
      fillSection(s, r);
      add(root, s.section);
    });
  }
  function verdictItem(v) {
    var item = el('li', 'verdict');
    item.id = 'run-' + v[0] + '-v-' + v[1];
    item.tabIndex = -1;
    item.setAttribute('data-step', String(Number(v[2])));
    item.setAttribute('data-action', String(v[7]).replace(/[^a-z]/g, ''));
    var line = add(el('div'), badge(v[7]), el('strong', null, v[4] + ' · ' + v[6]), ' at ',
                   link('#run-' + v[0] + '-s-' + Number(v[2]), 'step ' + Number(v[2])), ' (' + v[3] + ')');
    if (v[10]) add(line, ' · ' + v[10]);
    add(line, link('#run-' + v[0] + '-v-' + v[1], '¶', 'perma'));
    add(item, line);
    var outcome = null;
    if (v[11]) {
      outcome = el('span', 'outcome o-' + (v[11] === 'stopped' ? 'stopped' : 'continued'),
                   (v[11] === 'stopped' ? '■ stopped' : '↻ continued') + ' after it');
      if (v[11] === 'stopped' && v[12] < 5) outcome.textContent += ' (input ended after ' + v[12] + ' more call(s))';
    }
    add(item, add(el('div', 'cost'), el('span', 'loop-cost', 'loop ' + spendText(v[13])), outcome ? ' · ' : null, outcome));
    if (v[9] && v[9].length) add(item, el('div', 'muted', 'evidence: steps ' + v[9].join(', ')));
    if (v[8] !== null) add(item, el('pre', 'message', v[8]));
    return item;
  }

  function drawTimeline(number, again) {
    var s = sections[number];
    var run = runData(number);
    if (!s || !run || (s.drawn && !again)) return;
    var open = {};  // a redrawn timeline keeps its open steps open
    Array.prototype.forEach.call(s.box.querySelectorAll('details.step[open]'), function (d) { open[d.id] = true; });
    s.box.textContent = '';
    s.drawn = true;
    s.toggle.classList.add('hidden');
    var steps = run.steps;
    var episodes = run.episodes;  // [key, guard, verdict, rule, first, evidenceStep, last, spend]
    var acting = {};  // step -> true, of this run's acting verdicts
    (byRun[number] || []).forEach(function (v) { acting[v[2]] = true; });
    var maxDuration = 0;
    steps.forEach(function (st) { if (st[6] > maxDuration) maxDuration = st[6]; });
    if (episodes.length) {
      var legend = el('p', 'help', 'Loops: ');
      episodes.forEach(function (e, i) {
        add(legend, el('strong', null, 'L' + (i + 1)), ' ' + e[1] + ' · ' + e[3] + ': steps ' + e[5] + '–' + e[6] +
            ' (first repeat at ' + e[4] + '), ' + spendText(e[7]) + '. ');
      });
      add(legend, '▼ first evidence step, │ in the loop, ◆ verdict that acted, ↻ after the verdict, ▲ last step.');
      add(s.box, legend);
    }
    var list = el('ol', 'timeline');
    var verdictNumber = 0;
    steps.forEach(function (st) {
      var n = st[0];
      var item = el('li');
      var details = el('details', 'step');
      details.id = 'run-' + number + '-s-' + Number(n);
      if (open[details.id]) details.open = true;
      var head_ = el('summary');
      var marks = [];
      var inLoop = false;
      episodes.forEach(function (e, i) {
        if (n < e[5] || n > e[6]) return;
        inLoop = true;
        var firstActing = null;
        for (var k = e[5]; k <= e[6]; k++) { if (acting[k]) { firstActing = k; break; } }
        var glyph = '│';
        if (n === e[5]) glyph = '▼';
        if (acting[n]) glyph = '◆';
        else if (n === e[6]) glyph = '▲';
        else if (firstActing !== null && n > firstActing) glyph = '↻';
        marks.push('L' + (i + 1) + glyph);
      });
      if (inLoop) details.classList.add('inloop');
      var dur = el('span', 'dur');
      var bar = el('span', 'bar');
      if (st[6] !== null && maxDuration > 0) bar.style.setProperty('width', Math.max(1, Math.round(70 * st[6] / maxDuration)) + 'px');
      add(dur, bar, ms(st[6]));
      add(head_, el('span', 'gutter', marks.join(' ')), el('span', 'num', '#' + n), el('span', 'kind ' + (st[1] === 'model' ? 'model' : 'tool'), st[1]),
          el('span', 'name', st[3] || st[2]), el('span', 'what', st[4]), dur);
      add(details, head_);
      var body = el('div', 'stepbody');
      add(body, el('div', 'muted', 'span: ' + st[2] + (st[5] !== null ? ' · starts at +' + ms(st[5]) : '') + ' · took ' + ms(st[6])));
      function content(value, length, label) {
        if (typeof value === 'number') value = steps[value][label === 'arguments' ? 8 : 10];
        if (value === null || value === undefined) {
          add(body, el('div', 'muted', label + ': ' + (st[13] ? 'left out (the run\'s content budget is spent)' : head.content ? 'not captured' : 'left out')));
          return;
        }
        var note = length > value.length ? ' (first ' + num(value.length) + ' of ' + num(length) + ' characters)' : ' (' + num(length) + ' characters)';
        add(body, el('div', 'label', label + note), el('pre', 'block content', value));
      }
      if (st[1] === 'tool') content(st[8], st[9], 'arguments');
      content(st[10], st[11], st[1] === 'tool' ? 'result' : 'output');
      add(details, body);
      add(item, details);
      if (st[12].length) {
        var vs = el('div', 'stepverdicts');
        st[12].forEach(function (v) {  // [action, guard, verdict, rule, counts, acting, counting, evidence]
          var line = add(el('div', 'stepverdict'), badge(v[0]), v[1] + ' · ' + v[3] + (v[4] ? ' · ' + v[4] : ''));
          if (v[5]) {
            verdictNumber += 1;
            add(line, ' ', link('#run-' + number + '-v-' + verdictNumber, 'verdict ' + verdictNumber));
          } else if (v[6]) {
            add(line, el('span', 'muted', ' (counts only)'));
          }
          add(vs, line);
        });
        add(item, vs);
      }
      add(list, item);
    });
    add(s.box, list);
  }

  // --- navigation -------------------------------------------------------------------------------
  function follow() {
    var match = /^#run-(\d+)(?:-([vs])-(\d+))?$/.exec(location.hash);
    if (!match) return;
    var number = Number(match[1]);
    if (match[2] === 's') drawTimeline(number);
    var target = document.getElementById(location.hash.slice(1));
    if (!target) return;
    if (target.tagName === 'DETAILS') {
      target.open = true;
      target.querySelector('summary').focus();
    } else {
      target.tabIndex = -1;
      target.focus();
    }
    target.scrollIntoView({block: 'center'});
  }
  function move(selector, by) {
    var items = Array.prototype.slice.call(document.querySelectorAll(selector));
    if (!items.length) return;
    var at = items.indexOf(document.activeElement);
    var next = items[Math.min(items.length - 1, Math.max(0, at < 0 ? 0 : at + by))];
    next.focus();
    next.scrollIntoView({block: 'nearest'});
  }
  document.addEventListener('keydown', function (event) {
    if (event.ctrlKey || event.metaKey || event.altKey) return;
    var tag = event.target && event.target.tagName;
    if (tag === 'INPUT' || tag === 'SELECT' || tag === 'TEXTAREA') return;
    var key = event.key;
    if (key === 'j' || key === 'k') {
      var open = document.activeElement && document.activeElement.closest ? document.activeElement.closest('.run') : null;
      move((open ? '#' + open.id + ' ' : '') + 'details.step > summary', key === 'j' ? 1 : -1);
    } else if (key === 'n' || key === 'p') {
      move('li.verdict', key === 'n' ? 1 : -1);
    } else if (key === 'f') {
      filterBox.checked = !filterBox.checked; drawIndex();
    } else if (key === 's') {
      sortBox.value = sortBox.value === 'cost' ? 'input' : 'cost'; drawIndex();
    } else if (key === 'g') {
      document.getElementById('index').scrollIntoView();
    } else {
      return;
    }
    event.preventDefault();
  });
  document.addEventListener('focusin', function (event) {  // a verdict reached by n/p opens its run's timeline
    var item = event.target;
    if (item && item.classList && item.classList.contains('verdict')) {
      drawTimeline(Number(item.id.split('-')[1]));
    }
  });

  // --- live: poll the index, fetch the runs that changed, redraw them ---------------------------
  var shown = null, status = null;
  function getJSON(path) {
    return fetch(path, {credentials: 'same-origin', cache: 'no-store', headers: {'Accept': 'application/json'}})
      .then(function (answer) {
        if (answer.status === 401) { location.reload(); throw new Error('the token is asked for again'); }
        if (answer.status === 404) return null;  // a run forgotten meanwhile
        if (!answer.ok) throw new Error('HTTP ' + answer.status);
        return answer.json();
      });
  }
  function updated(index) {
    // what is drawn: the data's version, and which sessions are paused now (a pause changes no data)
    var key = index.version + ':' + index.runs.filter(function (r) { return r[18]; }).map(function (r) { return r[0]; }).join(',');
    if (key === shown) return Promise.resolve();
    head = index.head;
    runs = index.runs;
    summary();
    drawIndex();
    var root = document.getElementById('runs');
    var present = {};
    var changed = [];
    runs.forEach(function (r) {
      present[r[0]] = true;
      if (!r[14]) return;
      var s = sections[r[0]];
      if (!s) { s = makeSection(r); add(root, s.section); }
      if (s.version !== r[17]) changed.push(r);
      else fillSection(s, r);
    });
    Object.keys(sections).forEach(function (number) {
      if (!present[number]) { sections[number].section.remove(); delete sections[number]; delete details[number]; delete byRun[number]; }
    });
    sectionsTitle.textContent = 'Runs with a verdict that acted (' + Object.keys(sections).length + ')';
    changed.sort(function (a, b) { return b[17] - a[17]; });  // the most recently changed first
    return Promise.all(changed.slice(0, 8).map(function (r) {
      return getJSON(live.run + Number(r[0])).then(function (run) {
        var s = sections[r[0]];
        if (!run || !s) return;
        details[r[0]] = run;
        byRun[r[0]] = run.verdicts;
        s.version = run.run[17];
        fillSection(s, run.run);
        if (s.drawn) drawTimeline(r[0], true);
      });
    })).then(function () {
      if (changed.length <= 8) shown = key;  // else the rest on the next poll
    });
  }
  function poll() {
    getJSON(live.data).then(updated).then(function () {
      status.textContent = 'Updated at ' + new Date().toLocaleTimeString() + '.';
      status.className = 'muted';
      document.body.setAttribute('data-version', String(shown).split(':')[0]);
      document.body.setAttribute('data-ready', '1');
    }).catch(function (error) {
      status.textContent = 'Not updated: ' + error.message;
      status.className = 'warn';
    }).then(function () { setTimeout(poll, live.poll_ms); });
  }

  var sectionsTitle;
  if (live) {
    status = el('p', 'muted', 'Loading…');
    status.id = 'live-status';
    add(document.querySelector('header'), status);
    sectionsTitle = el('h2', null, 'Runs with a verdict that acted');
    add(document.getElementById('runs'), sectionsTitle);
    index();
    window.addEventListener('hashchange', follow);
    poll();
  } else {
    summary();
    index();
    runSections();
    window.addEventListener('hashchange', follow);
    follow();
    document.body.setAttribute('data-ready', '1');
  }
})();
