// MathJax 3 for the documentation site (loaded before assets/mathjax/tex-chtml.js, a local copy).
// Notebook markdown keeps TeX as $...$ and $$...$$ (nbconvert passes it through); the docs pages'
// pymdownx.arithmatex writes \(...\) and \[...\]. Code (pre, code) is never typeset.
window.MathJax = {
  tex: {
    inlineMath: [["$", "$"], ["\\(", "\\)"]],
    displayMath: [["$$", "$$"], ["\\[", "\\]"]],
    processEscapes: true,
    processEnvironments: true,
    tags: "ams",
  },
  options: {
    ignoreHtmlClass: "tex2jax_ignore",
    processHtmlClass: "tex2jax_process|arithmatex",
  },
};
