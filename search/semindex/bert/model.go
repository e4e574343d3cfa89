package bert

import (
	"context"
	"fmt"
	"math"
	"sync"

	"github.com/capkit/capkit/fault"
	"github.com/capkit/capkit/limits"
)

// Model is a loaded BERT encoder with mean pooling and L2 normalisation.
// It is safe for concurrent use.
type Model struct {
	cfg     Config
	tok     *Tokenizer
	digest  string
	workers int

	wordEmb, posEmb, typeEmb []float32
	embLN                    lnorm
	layers                   []layer

	pool sync.Pool // *workspace
}

type lnorm struct{ w, b []float32 }

type linear struct {
	w packed
	b []float32
}

type layer struct {
	qkv, ao, inter, out linear
	aln, oln            lnorm
}

func newModel(cfg *Config, tok *Tokenizer, st *safetensors, workers int) (*Model, error) {
	H, I := cfg.Hidden, cfg.Intermediate
	m := &Model{cfg: *cfg, tok: tok, workers: workers}
	if m.workers <= 0 {
		m.workers = defaultWorkers()
	}
	var err error
	if m.wordEmb, err = st.f32("embeddings.word_embeddings.weight", cfg.Vocab, H); err != nil {
		return nil, err
	}
	if m.posEmb, err = st.f32("embeddings.position_embeddings.weight", cfg.Positions, H); err != nil {
		return nil, err
	}
	if m.typeEmb, err = st.f32("embeddings.token_type_embeddings.weight", cfg.TypeVocab, H); err != nil {
		return nil, err
	}
	if m.embLN, err = loadLN(st, "embeddings.LayerNorm", H); err != nil {
		return nil, err
	}
	for i := range cfg.Layers {
		p := fmt.Sprintf("encoder.layer.%d.", i)
		var l layer
		if l.qkv, err = loadLinear(st, H, p+"attention.self.query", p+"attention.self.key", p+"attention.self.value"); err != nil {
			return nil, err
		}
		if l.ao, err = loadLinear(st, H, p+"attention.output.dense"); err != nil {
			return nil, err
		}
		if l.inter, err = loadLinearShape(st, I, H, p+"intermediate.dense"); err != nil {
			return nil, err
		}
		if l.out, err = loadLinearShape(st, H, I, p+"output.dense"); err != nil {
			return nil, err
		}
		if l.aln, err = loadLN(st, p+"attention.output.LayerNorm", H); err != nil {
			return nil, err
		}
		if l.oln, err = loadLN(st, p+"output.LayerNorm", H); err != nil {
			return nil, err
		}
		m.layers = append(m.layers, l)
	}
	return m, nil
}

func loadLN(st *safetensors, name string, h int) (lnorm, error) {
	w, err := st.f32(name+".weight", h)
	if err != nil {
		return lnorm{}, err
	}
	b, err := st.f32(name+".bias", h)
	return lnorm{w, b}, err
}

// loadLinear loads square h×h linear layers and concatenates them along
// the output (query, key and value become one product).
func loadLinear(st *safetensors, h int, names ...string) (linear, error) {
	var w, b []float32
	for _, n := range names {
		wi, err := st.f32(n+".weight", h, h)
		if err != nil {
			return linear{}, err
		}
		bi, err := st.f32(n+".bias", h)
		if err != nil {
			return linear{}, err
		}
		w, b = append(w, wi...), append(b, bi...)
	}
	l := linear{w: newPacked(h, len(b)), b: b}
	l.w.packTransposed(w, h)
	return l, nil
}

func loadLinearShape(st *safetensors, out, in int, name string) (linear, error) {
	w, err := st.f32(name+".weight", out, in)
	if err != nil {
		return linear{}, err
	}
	b, err := st.f32(name+".bias", out)
	if err != nil {
		return linear{}, err
	}
	l := linear{w: newPacked(in, out), b: b}
	l.w.packTransposed(w, in)
	return l, nil
}

// Tokenizer is the model's tokenizer.
func (m *Model) Tokenizer() *Tokenizer { return m.tok }

// Digest is the SHA-256 of the model's weights file.
func (m *Model) Digest() string { return m.digest }

// Dim is the length of an embedding.
func (m *Model) Dim() int { return m.cfg.Hidden }

// Config is the model's configuration.
func (m *Model) Config() Config { return m.cfg }

// MaxPieces is how many word pieces of text one embedding covers: the
// window less [CLS] and [SEP].
func (m *Model) MaxPieces() int { return min(limits.SemWindow, m.cfg.Positions) - 2 }

// EmbedText embeds text, which must fit in one window.
func (m *Model) EmbedText(ctx context.Context, text string) ([]float32, error) {
	t, err := m.tok.Tokenize(ctx, text)
	if err != nil {
		return nil, err
	}
	return m.Embed(ctx, t.IDs)
}

// Embed returns the mean-pooled, L2-normalised embedding of [CLS] ids
// [SEP]. More than MaxPieces ids is a limit failure: nothing is cut.
func (m *Model) Embed(ctx context.Context, ids []int32) ([]float32, error) {
	if len(ids) > m.MaxPieces() {
		return nil, fault.New(fault.Limit, "text is %d word pieces; one embedding covers at most %d (a window of %d with [CLS] and [SEP]); index longer text, which is cut into chunks",
			len(ids), m.MaxPieces(), m.MaxPieces()+2)
	}
	seq := make([]int32, 0, len(ids)+2)
	seq = append(append(append(seq, m.tok.cls), ids...), m.tok.sep)
	for _, id := range seq {
		if id < 0 || int(id) >= m.cfg.Vocab {
			return nil, fault.New(fault.InvalidInput, "token id %d is outside the vocabulary of %d", id, m.cfg.Vocab)
		}
	}
	ws, _ := m.pool.Get().(*workspace)
	if ws == nil {
		ws = m.newWorkspace()
	}
	defer m.pool.Put(ws)
	return m.forward(ctx, ws, seq)
}

// workspace is the scratch of one encoding, sized for a full window and
// reused across layers and calls.
type workspace struct {
	x, qkv, ctx, tmp, inter []float32
	main                    gemmScratch
	heads                   []headScratch
}

type headScratch struct {
	scores []float32
	kp, vp packed
	g      gemmScratch
}

func (m *Model) newWorkspace() *workspace {
	n := m.MaxPieces() + 2
	H, I := m.cfg.Hidden, m.cfg.Intermediate
	dh := H / m.cfg.Heads
	ws := &workspace{
		x: make([]float32, n*H), qkv: make([]float32, n*3*H), ctx: make([]float32, n*H),
		tmp: make([]float32, n*H), inter: make([]float32, n*I),
	}
	for range m.workers {
		ws.heads = append(ws.heads, headScratch{
			scores: make([]float32, n*n), kp: newPacked(dh, n), vp: newPacked(n, dh),
		})
	}
	return ws
}

func (m *Model) forward(ctx context.Context, ws *workspace, ids []int32) ([]float32, error) {
	n, H := len(ids), m.cfg.Hidden
	x := ws.x[:n*H]
	for t, id := range ids {
		row := x[t*H : (t+1)*H]
		we, pe, te := m.wordEmb[int(id)*H:], m.posEmb[t*H:], m.typeEmb[:H]
		for j := range row {
			row[j] = we[j] + pe[j] + te[j]
		}
		m.embLN.apply(row, row, m.cfg.LayerNormEps)
	}
	for i := range m.layers {
		if err := ctx.Err(); err != nil {
			return nil, fault.As(err)
		}
		m.layer(ws, &m.layers[i], n)
	}
	return meanNormalize(x, n, H), nil
}

func (m *Model) layer(ws *workspace, l *layer, n int) {
	H, I, eps := m.cfg.Hidden, m.cfg.Intermediate, m.cfg.LayerNormEps
	x, qkv, c, tmp, inter := ws.x[:n*H], ws.qkv[:n*3*H], ws.ctx[:n*H], ws.tmp[:n*H], ws.inter[:n*I]
	gemm(qkv, 3*H, x, H, n, &l.qkv.w, l.qkv.b, &ws.main, m.workers)
	m.attention(ws, qkv, c, n)
	gemm(tmp, H, c, H, n, &l.ao.w, l.ao.b, &ws.main, m.workers)
	residualLN(x, tmp, l.aln, n, H, eps)
	gemm(inter, I, x, H, n, &l.inter.w, l.inter.b, &ws.main, m.workers)
	parallel(n, m.workers, func(_, lo, hi int) { gelu(inter[lo*I : hi*I]) })
	gemm(tmp, H, inter, I, n, &l.out.w, l.out.b, &ws.main, m.workers)
	residualLN(x, tmp, l.oln, n, H, eps)
}

// attention computes every head's softmax(QKᵀ/√d)·V into c, the heads
// shared among the workers.
func (m *Model) attention(ws *workspace, qkv, c []float32, n int) {
	H, heads := m.cfg.Hidden, m.cfg.Heads
	dh := H / heads
	scale := float32(1 / math.Sqrt(float64(dh)))
	parallel(heads, m.workers, func(w, h0, h1 int) {
		hs := &ws.heads[w]
		kp, vp := packed{k: dh, n: n, data: hs.kp.data[:panels(n)*dh*panelCols]}, packed{k: n, n: dh, data: hs.vp.data[:panels(dh)*n*panelCols]}
		s := hs.scores[:n*n]
		for h := h0; h < h1; h++ {
			kp.packTransposed(qkv[H+h*dh:], 3*H)
			gemm(s, n, qkv[h*dh:], 3*H, n, &kp, nil, &hs.g, 1)
			for r := range n {
				softmax(s[r*n:(r+1)*n], scale)
			}
			vp.packRows(qkv[2*H+h*dh:], 3*H)
			gemm(c[h*dh:], H, s, n, n, &vp, nil, &hs.g, 1)
		}
	})
}

func (ln lnorm) apply(dst, src []float32, eps float64) {
	var sum float64
	for _, v := range src {
		sum += float64(v)
	}
	mean := sum / float64(len(src))
	var vs float64
	for _, v := range src {
		d := float64(v) - mean
		vs += d * d
	}
	inv := 1 / math.Sqrt(vs/float64(len(src))+eps)
	for j, v := range src {
		dst[j] = float32((float64(v)-mean)*inv)*ln.w[j] + ln.b[j]
	}
}

func residualLN(x, y []float32, ln lnorm, n, h int, eps float64) {
	for t := range n {
		row, add := x[t*h:(t+1)*h], y[t*h:(t+1)*h]
		for j := range row {
			add[j] += row[j]
		}
		ln.apply(row, add, eps)
	}
}

func gelu(v []float32) {
	for i, x := range v {
		v[i] = float32(0.5 * float64(x) * (1 + math.Erf(float64(x)/math.Sqrt2)))
	}
}

func softmax(row []float32, scale float32) {
	mx := float32(math.Inf(-1))
	for _, v := range row {
		mx = max(mx, v)
	}
	var sum float64
	for i, v := range row {
		e := math.Exp(float64((v - mx) * scale))
		row[i] = float32(e)
		sum += e
	}
	inv := float32(1 / sum)
	for i := range row {
		row[i] *= inv
	}
}

func meanNormalize(x []float32, n, h int) []float32 {
	acc := make([]float64, h)
	for t := range n {
		for j, v := range x[t*h : (t+1)*h] {
			acc[j] += float64(v)
		}
	}
	var norm float64
	for j := range acc {
		acc[j] /= float64(n)
		norm += acc[j] * acc[j]
	}
	norm = math.Sqrt(norm)
	out := make([]float32, h)
	for j, v := range acc {
		if norm > 0 {
			out[j] = float32(v / norm)
		}
	}
	return out
}
